"""The command line's commands, for tests that look at every one."""

import click

from ganforge.cli import main


def leaf_commands(group: click.Group = main, prefix: str = "") -> dict[str, click.Command]:
    """Every command that is not a group, by its words after `ganforge` ("train", "dataset build", ...)."""
    found = {}
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            found |= leaf_commands(command, f"{prefix}{name} ")
        else:
            found[f"{prefix}{name}"] = command
    return found
