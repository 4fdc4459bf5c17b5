"""The help and the docs tell the truth about the command line: every flag the docs' command table names is an option of
that command, with the choices the table lists; every metric name, preset and choice appears in the help of each
command that takes it; every command's help ends with examples that use only its own options."""

import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from cli_helpers import leaf_commands
from ganforge.cli import main
from ganforge.metric_names import METRIC_NAMES
from ganforge.presets import PRESETS

COMMAND_TABLE = Path(__file__).parents[1] / "docs" / "index.md"  # the front page of the docs site


COMMANDS = leaf_commands()


def _options(command: click.Command) -> dict[str, click.Parameter]:
    return {flag: p for p in command.params for flag in (*p.opts, *p.secondary_opts) if flag.startswith("-")}


def _invocations(text: str) -> list[tuple[click.Command, str]]:
    """(command, what follows its name) for each `ganforge ...` invocation in a table cell or an example block; a
    backticked part that does not start with `ganforge` continues the invocation before it."""
    found: list[tuple[click.Command, str]] = []
    for part in re.findall(r"`([^`]+)`", text) or [text]:
        words = part.replace("\\|", "|").split()
        if words[:1] != ["ganforge"]:
            if found:
                found[-1] = (found[-1][0], f"{found[-1][1]} {' '.join(words)}")
            continue
        names = [n for n in COMMANDS if words[1 : 1 + len(n.split())] == n.split()]
        name = max(names, key=len, default="")
        found.append((COMMANDS[name] if name else main, " ".join(words[1 + len(name.split()) :])))
    return found


def _readme_table() -> list[str]:
    """The first cell of every row of the docs' command table."""
    section = COMMAND_TABLE.read_text().split("## Commands", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `ganforge")]
    return [re.split(r"` \| ", row, maxsplit=1)[0] + "`" for row in rows]


def _flags_and_values(text: str) -> list[tuple[str, str]]:
    return re.findall(r"(--[a-z0-9-]+)(?:[ =]([^\s\]]+))?", text)


def _check_invocation(command: click.Command, text: str) -> None:
    options = _options(command)
    for flag, value in _flags_and_values(text):
        assert flag in options, f"{command.name}: {flag} is not one of its options"
        param = options[flag]
        if "|" in value and isinstance(param.type, click.Choice):
            assert set(value.split("|")) == set(map(str, param.type.choices)), f"{command.name} {flag}: {value}"
        if flag == "--metrics" and value:
            assert set(value.split(",")) <= set(METRIC_NAMES), value


def test_command_table_names_only_real_options_and_their_choices():
    cells = _readme_table()
    assert len(cells) >= 12
    seen = set()
    for cell in cells:
        for command, text in _invocations(cell):
            _check_invocation(command, text)
            seen.add(command.name)
    assert {c.name for c in COMMANDS.values()} <= seen  # every command has a row


def test_command_table_shows_every_required_option_of_each_command():
    """The other direction: a row leaves optional flags out, but never one its command cannot run without."""
    rows: dict[click.Command, str] = {}
    for cell in _readme_table():
        for command, text in _invocations(cell):
            rows[command] = f"{rows.get(command, '')} {text}"
    required = {(name, flag) for name, c in COMMANDS.items() for flag, p in _options(c).items() if p.required}
    assert ("train", "--data") in required and ("generate", "--network") in required
    for name, flag in required:
        assert re.search(rf"{flag}(?![a-z-])", rows[COMMANDS[name]]), f"command table row of {name} lacks {flag}"


def _help(words: str) -> str:
    result = CliRunner().invoke(main, [*words.split(), "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    return " ".join(result.output.split())  # wrapped lines joined


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_choice_and_name_a_command_takes_is_in_its_help(name):
    text, options = _help(name), _options(COMMANDS[name])
    for param in set(options.values()):
        if isinstance(param.type, click.Choice):
            for choice in map(str, param.type.choices):
                assert choice in text, f"{name} {param.opts[0]}: {choice} not in the help"
    if "--metrics" in options:
        for metric in METRIC_NAMES:
            assert metric in text, f"{name} --metrics: {metric} not in the help"
    if "--cfg" in options:
        for preset in PRESETS:
            assert preset in text, f"{name} --cfg: {preset} not in the help"


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_help_ends_with_examples_of_its_own_options(name):
    text = CliRunner().invoke(main, [*name.split(), "--help"]).output
    assert "Examples:" in text, f"{name}: no examples"
    lines = [line.strip() for line in text.split("Examples:", 1)[1].splitlines() if line.strip()]
    assert lines and all(f"{line} ".startswith(f"ganforge {name} ") for line in lines), lines
    for line in lines:
        ((command, rest),) = _invocations(line)
        assert command is COMMANDS[name], line
        _check_invocation(command, rest)


def test_what_train_help_says_auto_precision_picks_is_what_it_picks():
    """The help once said auto picks bf16 on CPUs with native bf16 while the code kept every CPU on fp32."""
    from ganforge.devices import CPU_BF16_FLAGS, pick_precision

    assert "auto: bf16 on Ampere+ GPUs, else fp32" in _help("train")
    assert pick_precision("cuda", (8, 0), frozenset())[0] == pick_precision("cuda", (9, 0), frozenset())[0] == "bf16"
    assert pick_precision("cuda", (7, 5), frozenset())[0] == "fp32"
    for flags in (frozenset(), frozenset(CPU_BF16_FLAGS)):  # "else": CPUs, with native bf16 or without
        assert pick_precision("cpu", None, flags)[0] == "fp32"
