"""click options derived from option declarations (`ganforge.option`), and a command whose help lists them by section.

click only parses here: an int option takes an integer and a float option a number (NaN and infinity included),
and every range and combination is checked where the options become facts, so that a Python caller and `--dry-run`
meet exactly the checks of the command line.
"""

from pathlib import Path

import click

from ganforge.option import Declared

KINDS = {int: click.INT, float: click.FLOAT, Path: click.Path(path_type=Path)}
FILE = click.Path(dir_okay=False, path_type=Path)  # a Path option declared `file`: a folder there is refused


def click_option(d: Declared):
    """The click option of one declaration: a switch, a choice, or a value of its kind (repeated, or several words,
    where declared so); never a default (None = not given; the help text names where the default comes from)."""
    shown = d.shown_default()
    help_text = d.option.help + (f"  [default: {shown}]" if shown else "")
    flags = (d.flag, *d.option.aliases, d.name)
    if d.kind is bool:
        return click.option(*flags, is_flag=True, help=help_text)
    kind = click.Choice(d.option.choices) if d.option.choices else KINDS.get(d.kind, click.STRING)
    kind = FILE if d.option.file else kind
    if d.option.bare:  # the flag alone gives `bare`; a following word that is not an option is its value
        return click.option(*flags, type=kind, is_flag=False, flag_value=d.option.bare, help=help_text)
    return click.option(
        *flags,
        type=kind,
        required=d.option.required,
        metavar=d.option.metavar,
        multiple=d.option.multiple,
        nargs=d.option.nargs,
        envvar=d.option.envvar or None,
        help=help_text,
    )


def declared_options(options: list[Declared]):
    """A decorator that adds the click option of every declaration to a command, in the order given."""

    def decorate(function):
        for d in reversed(options):
            function = click_option(d)(function)
        function.__declared_sections__ = {d.name: d.option.section for d in options}
        function.__declared__ = {d.name: d for d in options}  # the docs' CLI reference reads ranges from here
        return function

    return decorate


class SectionedCommand(click.Command):
    """A command whose --help lists its declared options under their section headings, in the order declared."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        sections = getattr(self.callback, "__declared_sections__", {})
        records: dict[str, list] = {}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is not None and not isinstance(param, click.Argument):  # the usage line names the arguments
                records.setdefault(sections.get(param.name, "Other"), []).append(record)
        for section, rows in records.items():
            with formatter.section(section):
                formatter.write_dl(rows)
