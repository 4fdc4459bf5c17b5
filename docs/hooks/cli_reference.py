"""The command-line reference page, generated from the click commands themselves at every docs build.

mkdocs calls `on_page_markdown` for each page; on `cli.md` the marker below is replaced by one section per command:
its help text, usage, every argument and option with what it takes, its default and the values it accepts, and the
examples its `--help` ends with. Nothing of it is written by hand, so it cannot drift from the command line.
"""

import re

import click
from page_marker import replace_marker

from ganforge.cli import main

MARKER = "<!-- generated: the CLI reference -->"
PAGE = "cli.md"
DEFAULT = re.compile(r"\s*\[default: ([^\]]*)\]\s*$")


def on_page_markdown(markdown: str, page, config, files) -> str:
    """mkdocs' hook: the reference in place of the marker on the CLI page; other pages as they are."""
    return replace_marker(markdown, page, PAGE, MARKER, reference)


def commands(group: click.Group = main, prefix: str = "ganforge") -> list[tuple[str, click.Command]]:
    """Every command under `group`, groups included, by its full name, depth first in the order `--help` lists
    them."""
    found = []
    context = click.Context(group, info_name=prefix)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        if command is None or command.hidden:
            continue
        found.append((f"{prefix} {name}", command))
        if isinstance(command, click.Group):
            found += commands(command, f"{prefix} {name}")
    return found


def reference() -> str:
    """The whole reference: the top-level command, then every subcommand."""
    sections = [_command_section("ganforge", main)]
    sections += [_command_section(name, command) for name, command in commands()]
    return "\n\n".join(sections) + "\n"


def _command_section(name: str, command: click.Command) -> str:
    context = click.Context(command, info_name=name)
    lines = [f"## `{name}`", "", _paragraphs(command.help or ""), "", f"Usage: `{command.get_usage(context)[7:]}`"]
    arguments = [p for p in command.params if isinstance(p, click.Argument)]
    if arguments:
        lines += ["", "Arguments: " + ", ".join(f"`{a.human_readable_name}`" for a in arguments)]
    if isinstance(command, click.Group):
        subcommands = [f"[`{name} {sub}`](#{_anchor(f'{name} {sub}')})" for sub in command.list_commands(context)]
        lines += ["", "Commands: " + ", ".join(subcommands)]
    for section, options in _option_sections(command).items():
        lines += ["", f"**{section}**", "", "| option | takes | default | accepts | what it does |"]
        lines += ["| --- | --- | --- | --- | --- |"] + [_option_row(option, command) for option in options]
    examples = _examples(command)
    if examples:
        lines += ["", "Examples (from its `--help`):", "", "```text", *examples, "```"]
    return "\n".join(lines)


def _paragraphs(text: str) -> str:
    """A click help text as Markdown: click's \\b markers dropped, each paragraph's lines joined."""
    text = text.replace("\b\n", "")
    return "\n\n".join(" ".join(p.split()) for p in re.split(r"\n\s*\n", text.strip()))


def _anchor(name: str) -> str:
    """The id the Markdown toc gives the heading `name` in backticks."""
    return re.sub(r"[^a-z0-9 _-]", "", name.lower()).strip().replace(" ", "-")


def _option_sections(command: click.Command) -> dict[str, list[click.Option]]:
    """Options by the section their help lists them under (declared commands), else all under "Options"."""
    sections = getattr(command.callback, "__declared_sections__", {})
    grouped: dict[str, list[click.Option]] = {}
    for param in command.params:
        if isinstance(param, click.Option) and not param.hidden:
            grouped.setdefault(sections.get(param.name, "Options"), []).append(param)
    grouped.setdefault("Options", []).append(_help_option(command))
    return grouped


def _help_option(command: click.Command) -> click.Option:
    return command.get_help_option(click.Context(command))


def _option_row(option: click.Option, command: click.Command) -> str:
    flags = ", ".join(f"`{flag}`" for flag in (*option.opts, *option.secondary_opts))
    help_text = " ".join((option.help or "").split())
    shown = DEFAULT.search(help_text)
    description = DEFAULT.sub("", help_text)
    cells = [flags, _takes(option), _default(option, shown, command), _accepts(option, command), description]
    return "| " + " | ".join(_cell(cell) for cell in cells) + " |"


def _takes(option: click.Option) -> str:
    if option.is_flag and not isinstance(option.type, click.Choice):
        return "switch"
    names = {"integer": "INTEGER", "integer range": "INTEGER", "float": "NUMBER", "float range": "NUMBER"}
    kind = option.metavar or names.get(option.type.name, option.type.name.upper())
    if isinstance(option.type, click.Choice):
        kind = "choice"
    return f"{kind}, repeatable" if option.multiple else kind


def _default(option: click.Option, shown: re.Match | None, command: click.Command) -> str:
    """The default its help states, else the one click applies; "required", or blank where there is none."""
    if option.required:
        return "required"
    if shown:
        return shown.group(1)
    value = option.get_default(click.Context(command), call=False)
    if value in (None, False, ()) or callable(value) or type(value).__name__ == "Sentinel":  # click's UNSET
        return ""
    return str(value)


def _accepts(option: click.Option, command: click.Command) -> str:
    kind = option.type
    if isinstance(kind, click.Choice):
        return ", ".join(f"`{choice}`" for choice in kind.choices)
    if isinstance(kind, click.IntRange | click.FloatRange):
        return _range_text(kind)
    declared = getattr(command.callback, "__declared__", {}).get(option.name)
    if declared is not None:
        if declared.option.must:
            return declared.option.must
        if declared.option.range is not None:
            return declared.option.range.describe()
    return ""


def _range_text(kind: click.IntRange | click.FloatRange) -> str:
    """The range as `--help` writes it: `x>=1`, `0<=x<=256`, `x<1`."""
    low = f"{kind.min}{'<' if kind.min_open else '<='}"
    high = f"{'<' if kind.max_open else '<='}{kind.max}"
    if kind.min is None:
        return f"x{high}"
    if kind.max is None:
        return f"x{'>' if kind.min_open else '>='}{kind.min}"
    return f"{low}x{high}"


def _examples(command: click.Command) -> list[str]:
    epilog = command.epilog or ""
    if "Examples:" not in epilog:
        return []
    return [line.strip() for line in epilog.split("Examples:", 1)[1].splitlines() if line.strip() not in ("", "\b")]


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")
