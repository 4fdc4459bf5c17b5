"""The `ganforge` command: a click group, one thin function per subcommand, no logic of its own.

Heavy modules are imported inside each command so that `ganforge --help` stays instant.
"""

import sys

import click

from ganforge import __version__
from ganforge.errors import UserError


class _Group(click.Group):
    """Turns a UserError from any subcommand into one message on stderr and exit code 2."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except UserError as error:
            for problem in error.problems:
                click.echo(f"error: {problem}", err=True)
            sys.exit(2)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@click.version_option(__version__, prog_name="ganforge")
def main():
    """Train, evaluate and export StyleGAN2-family GANs on one GPU, many GPUs, or a CPU."""
