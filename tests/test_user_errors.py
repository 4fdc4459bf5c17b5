"""Every `--flag` a user-error message names exists on a command that can raise that message.

The messages are read from the source (every string in a `UserError(...)` call, f-strings' literal parts included);
which commands can raise them follows from the module they are in.
"""

import ast
import re
from pathlib import Path

import click

from ganforge.cli import main

SOURCE = Path(__file__).resolve().parents[1] / "src" / "ganforge"
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
QUOTED_COMMAND = re.compile(r"`ganforge ([^`]*)`")  # advice to run another command: its flags are that command's

# Modules (a path under src/ganforge, or a package folder) -> the commands that run their code.
DATA_READERS = ("train", "metrics", "doctor", "dataset info", "dataset verify", "bench")
NETWORK_READERS = ("train", "generate", "export", "metrics", "import", "project", "explore")
RAISED_BY = {
    "train/": ("train",), "config/": ("train", "bench"), "option.py": ("train", "bench"),
    "augment/": ("train", "bench"), "preempt.py": ("train",), "dist.py": ("train", "metrics"),
    "checkpoint/inspect.py": ("checkpoint verify", "checkpoint diff"), "checkpoint/": ("train",),
    "data/build.py": ("dataset build",), "data/check.py": ("dataset info", "dataset verify"), "data/": DATA_READERS,
    "data/options.py": ("dataset build", "dataset verify"),
    "metrics/": ("metrics", "train"), "generate/": ("generate", "explore"), "interop/": NETWORK_READERS,
    "snapshot.py": NETWORK_READERS, "nets/": NETWORK_READERS, "export/": ("export",), "bench/": ("bench",),
    "report/": ("report",), "doctor/": ("doctor",), "devices.py": ("train", "generate", "metrics", "bench"),
    "demo.py": ("train",), "monitor/": ("train", "doctor"), "metrics/perceptual.py": ("project",),
    "project/": ("project",), "projected.py": ("generate",), "cli/report.py": ("report",),
    "track/": ("train", "report"), "explore/": ("explore",), "api.py": ("generate", "project"),
    "sweep/": ("sweep", "report"), "cli/sweep.py": ("sweep",),
}  # fmt: skip
# Flags of other programs that messages may tell the user to pass there.
OTHER_PROGRAMS = {"--max-restarts"}  # torchrun's


def _commands() -> dict[str, set[str]]:
    """ "dataset build" -> its option names, for every command and subcommand."""
    found = {}

    def visit(command: click.Command, name: str) -> None:
        if isinstance(command, click.Group):
            for sub_name, sub in command.commands.items():
                visit(sub, f"{name} {sub_name}".strip())
        else:
            found[name] = {opt for param in command.params for opt in getattr(param, "opts", [])}

    visit(main, "")
    return found


def _message_flags(commands: dict[str, set[str]]) -> list[tuple[str, int, str, tuple[str, ...] | None]]:
    """(module path, line, flag, command) for every flag in the text of every UserError(...) call; the command is
    given where the message quotes a ganforge command line (None: the commands that run the module)."""
    flags = []
    for path in sorted(SOURCE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            callee = getattr(node, "func", None)
            if not isinstance(node, ast.Call) or getattr(callee, "id", getattr(callee, "attr", None)) != "UserError":
                continue
            texts = [sub.value for sub in ast.walk(node) if isinstance(getattr(sub, "value", None), str)]
            module = path.relative_to(SOURCE).as_posix()
            for text in texts:
                for quoted in QUOTED_COMMAND.findall(text):
                    words = quoted.split()
                    name = " ".join(words[:2]) if " ".join(words[:2]) in commands else words[0]
                    flags += [(module, node.lineno, flag, (name,)) for flag in FLAG.findall(quoted)]
                flags += [(module, node.lineno, flag, None) for flag in FLAG.findall(QUOTED_COMMAND.sub("", text))]
    return flags


def _raised_by(module: str) -> tuple[str, ...]:
    prefixes = [prefix for prefix in RAISED_BY if module == prefix or module.startswith(prefix)]
    assert prefixes, f"{module}: which commands run it? add it to RAISED_BY"
    return RAISED_BY[max(prefixes, key=len)]


def test_every_flag_a_user_error_names_exists_on_a_command_that_can_raise_it():
    commands = _commands()
    flags = _message_flags(commands)
    assert len(flags) > 20, "the source scan found almost no messages: is SOURCE right?"
    wrong = []
    for module, line, flag, quoted in flags:
        raisers = quoted or _raised_by(module)
        assert set(raisers) <= set(commands), f"RAISED_BY names a command that does not exist: {raisers}"
        if flag not in OTHER_PROGRAMS and not any(flag in commands[name] for name in raisers):
            wrong.append(f"{module}:{line}: {flag} is not an option of {', '.join(raisers)}")
    assert not wrong, "\n".join(wrong)
