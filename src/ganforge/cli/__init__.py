"""The `ganforge` command: a click group, one module per subcommand, each a thin wrapper over an importable function.

Heavy modules are imported inside each command so that `ganforge --help` stays instant.
"""

import contextlib
import signal
import sys
import warnings

import click

from ganforge import __version__
from ganforge.allocator import keep_freed_memory
from ganforge.cli.bench import bench
from ganforge.cli.checkpoint import checkpoint_group
from ganforge.cli.dataset import dataset
from ganforge.cli.doctor import doctor
from ganforge.cli.explore import explore
from ganforge.cli.export import export
from ganforge.cli.generate import generate
from ganforge.cli.metrics import metrics
from ganforge.cli.network import import_
from ganforge.cli.project import project
from ganforge.cli.report import report
from ganforge.cli.sweep import sweep
from ganforge.cli.train import train
from ganforge.errors import UserError, carried_problems
from ganforge.urls import public_text


def _one_line_warnings():
    """A `warnings.showwarning` for warnings meant for the user (a skipped checkpoint, a corrupt cached file): one line
    without source lines, and each text once per command (several metrics may each warn about the same input)."""
    shown = set()

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        text = public_text(str(message))  # a library's warning may quote a URL with its credentials
        if text not in shown:
            shown.add(text)
            click.echo(f"warning: {text}", err=True)

    return show


class _Group(click.Group):
    """Turns a UserError from any subcommand into one message on stderr and exit code 2, Ctrl-C into exit 130
    without a traceback; warnings become one line."""

    def invoke(self, ctx: click.Context):
        with warnings.catch_warnings(), _sigterm_unwinds():
            warnings.showwarning = _one_line_warnings()
            try:
                return super().invoke(ctx)
            except UserError as error:
                for problem in carried_problems(error):
                    click.echo(f"error: {problem}", err=True)
                sys.exit(2)
            except click.UsageError as error:  # a bad flag or value: one line, like every other user error
                click.echo(f"error: {public_text(_usage_line(error))}", err=True)
                sys.exit(2)
            except KeyboardInterrupt:  # Ctrl-C outside a training loop (which checkpoints and exits 130 itself)
                click.echo("interrupted", err=True)
                sys.exit(130)
            except _Terminated:  # SIGTERM outside a training loop (which checkpoints and exits 143 itself)
                click.echo("terminated", err=True)
                sys.exit(143)


class _Terminated(BaseException):
    """SIGTERM raised as an exception, like Ctrl-C's KeyboardInterrupt, so that what a command leaves half-written
    (`dataset build`'s DEST.partial, a temporary file) is removed on the way out."""


@contextlib.contextmanager
def _sigterm_unwinds():
    def unwind(signum, frame):
        raise _Terminated

    previous = signal.signal(signal.SIGTERM, unwind)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _usage_line(error: click.UsageError) -> str:
    """click's usage error (usage, hint, blank line, message) as one line that names the command and its help."""
    command = error.ctx.command_path if error.ctx is not None else "ganforge"
    message = " ".join(error.format_message().split())
    return f"{command}: {message} (see `{command} --help`)"


@click.group(
    cls=_Group,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"], "show_default": True},
)
@click.version_option(__version__, prog_name="ganforge")
@click.pass_context
def main(ctx: click.Context):
    """Train, evaluate and export StyleGAN2-family GANs on one GPU, many GPUs, or a CPU."""
    keep_freed_memory()  # before the first tensor: every step reuses its large blocks instead of mapping them anew
    if ctx.invoked_subcommand is None:  # bare `ganforge` asks what there is: the help, and success
        click.echo(ctx.get_help())


for _command in (
    doctor,
    train,
    sweep,
    dataset,
    metrics,
    generate,
    explore,
    project,
    import_,
    export,
    bench,
    report,
    checkpoint_group,
):
    main.add_command(_command)
