"""The generated references cover what they document: every command and group of the command line has a section on
the CLI page, with every option, the default, `required` and range that click's own `--help` shows for it, and every
example line its help ends with; every public member of `ganforge.api.Network` is on the Python API page; and the
pages themselves hold only the markers the hooks replace (nothing of the reference is written by hand); the
architecture page's list of a checkpoint's state is the one in `checkpoint/layout.py`; and the watching page's table of
a tick's statistics is `stat_names.STATS`, which names every statistic that module declares."""

import importlib.util
import re
import sys

import click
import pytest
from doc_blocks import DOCS

from cli_helpers import leaf_commands
from ganforge import api, stat_names
from ganforge.checkpoint import layout
from ganforge.cli import main

COMMANDS = leaf_commands()
HELP_EXTRAS = re.compile(r"\[([^\]]*)\]\s*$")  # the "[default: 4; 1<=x<=64]" click puts at the end of an option's help


def _hook(name: str):
    """A hook loaded as mkdocs loads it: with its folder on the import path (for the helper the hooks share)."""
    spec = importlib.util.spec_from_file_location(name, DOCS / "hooks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(DOCS / "hooks"))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(DOCS / "hooks"))
    return module


CLI = _hook("cli_reference")
API = _hook("api_reference")
STATE = _hook("checkpoint_state")
STATS = _hook("stat_names")
CLI_PAGE = CLI.reference()


class _Page:
    """The stand-in for the mkdocs page object the hooks look at: its file's path in docs/."""

    def __init__(self, src_uri: str):
        self.file = type("File", (), {"src_uri": src_uri})()


def _section(name: str) -> str:
    """The CLI page's section of `ganforge NAME`, up to the next command's heading."""
    heading = f"## `ganforge {name}`\n"
    assert heading in CLI_PAGE, f"the CLI reference has no section for `ganforge {name}`"
    return CLI_PAGE.split(heading, 1)[1].split("\n## `", 1)[0]


def _squeezed(text: str) -> str:
    return re.sub(r"[\s\\`]", "", text)


def _groups(group: click.Group = main, prefix: str = "") -> list[str]:
    found = []
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            found += [f"{prefix}{name}", *_groups(command, f"{prefix}{name} ")]
    return found


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_every_option_with_its_default_range_and_examples(name):
    command, section = COMMANDS[name], _section(name)
    context = click.Context(command, info_name=f"ganforge {name}")
    rows = {row.split(" | ", 1)[0]: row for row in section.splitlines() if row.startswith("| `-")}
    for param in command.params:
        if not isinstance(param, click.Option) or param.hidden:
            continue
        flags = ", ".join(f"`{flag}`" for flag in (*param.opts, *param.secondary_opts))
        assert f"| {flags}" in rows, f"`ganforge {name}`: the reference lacks the row of {flags}"
        extras = HELP_EXTRAS.search(param.get_help_record(context)[1])
        for extra in extras.group(1).split("; ") if extras else ():
            shown = extra.removeprefix("default: ")
            assert _squeezed(shown) in _squeezed(rows[f"| {flags}"]), f"`ganforge {name}` {flags}: {extra!r} missing"
    examples = (command.epilog or "").split("Examples:", 1)[-1] if "Examples:" in (command.epilog or "") else ""
    assert examples, f"`ganforge {name}`: its help ends without examples"
    for line in examples.splitlines():
        if line.strip() not in ("", "\b"):
            assert line.strip() in section, f"`ganforge {name}`: the example {line.strip()!r} is missing"


def test_every_group_and_the_top_level_command_have_a_section():
    assert "## `ganforge`\n" in CLI_PAGE
    groups = _groups()
    assert {"dataset", "checkpoint"} <= set(groups)
    for group in groups:
        for sub in main.commands[group.split()[0]].commands if " " not in group else ():
            assert f"(#ganforge-{group}-{sub})" in _section(group), f"`ganforge {group}` does not link `{sub}`"


def test_the_api_page_has_every_public_member_of_network():
    page = API.reference()
    assert "### `ganforge.load(" in page
    public = [name for name in vars(api.Network) if not name.startswith("_")]
    assert {"images", "w", "synthesize", "project", "to"} <= set(public)
    for name in public:
        assert f"#### `Network.{name}" in page, f"the Python API reference lacks Network.{name}"


@pytest.mark.parametrize("hook", [CLI, API], ids=["cli", "api"])
def test_the_pages_hold_only_the_marker_that_the_hook_replaces(hook):
    text = (DOCS / hook.PAGE).read_text()
    assert text.count(hook.MARKER) == 1
    assert "\n## `ganforge" not in text and "\n### `" not in text  # no hand-written reference entries
    built = hook.on_page_markdown(text, _Page(hook.PAGE), None, None)
    assert hook.MARKER not in built and len(built) > len(text) + 1000
    other = "# Other\n\n" + hook.MARKER
    assert hook.on_page_markdown(other, _Page("other.md"), None, None) == other  # other pages are left as they are


def test_the_architecture_pages_list_of_the_checkpoint_state_is_the_layouts():
    text = (DOCS / STATE.PAGE).read_text()
    assert text.count(STATE.MARKER) == 1
    assert "- The state" not in text and "`opt_G`" not in text  # no hand-written list beside the generated one
    built = STATE.on_page_markdown(text, _Page(STATE.PAGE), None, None)
    listed = built.split("- The state, in the order a checkpoint stores it", 1)[1].split("\n- ", 1)[0].splitlines()[1:]
    assert listed == [f"    - `{entry.key}`: {entry.holds}" for entry in layout.ENTRIES]
    assert [line.split("`")[1] for line in listed] == list(layout.STATE_KEYS) == [
        "G", "D", "G_ema", "opt_G", "opt_D", "scaler_G", "scaler_D", "rng", "sampler", "augment", "loop",
        "config_hash", "config",
    ]  # fmt: skip
    assert all(entry.holds and "\n" not in entry.holds for entry in layout.ENTRIES)
    other = "# Other\n\n" + STATE.MARKER
    assert STATE.on_page_markdown(other, _Page("other.md"), None, None) == other


def test_the_watching_pages_table_of_statistics_is_stat_names_and_names_each_once():
    declared = {value for key, value in vars(stat_names).items() if key.isupper() and isinstance(value, str)}
    listed = [name for name, _ in stat_names.STATS]
    assert sorted(listed) == sorted(declared) and len(set(listed)) == len(listed)
    assert all(meaning and "\n" not in meaning for _, meaning in stat_names.STATS)
    text = (DOCS / STATS.PAGE).read_text()
    assert text.count(STATS.MARKER) == 1 and "Loss/G/main" not in text  # no hand-written table beside it
    built = STATS.on_page_markdown(text, _Page(STATS.PAGE), None, None)
    rows = [line for line in built.splitlines() if line.startswith("| `")]
    assert rows[0] == f"| `{stat_names.LOSS_G}` | {stat_names.STATS[0][1]} |" and len(rows) == len(listed)
    assert f"| `{stat_names.SKIPPED}<phase>` |" in built
