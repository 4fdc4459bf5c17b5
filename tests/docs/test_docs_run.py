"""The docs run: every `console` and `python` block of the pages is run at toy size in one shared folder, where the
Quickstart's block built the demo digits and trained their run first, and each command must print the output lines
its block shows; the notebook runs against that run. A block that cannot run here says why (`doc_blocks.KINDS`).

Toy size: `TOY_SIZE` shortens what would take minutes (the Quickstart's 40 kimg become 0.03); nothing else of a
command changes. `ganforge` commands run in this process through the click group the console script calls (no
interpreter start per command); servers and shell lines run as processes."""

import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
import traceback
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import nbformat
import pytest
from click.testing import CliRunner
from doc_blocks import KINDS, ROOT, SHELL_LANGUAGES, Block, Command, blocks, missing_shown_lines, pages

from ganforge.cli import main

TOY_SIZE = (
    (re.compile(r"--kimg \d+(\.\d+)?"), "--kimg 0.03"),  # 2 batches of the tiny preset, not its 40 kimg
    (re.compile(r"--steps \d+"), "--steps 20"),  # a projection's 20 steps, not hundreds
)
SERVERS = ("ganforge explore",)  # serve until Ctrl-C: read until their last shown line, then interrupted
SHELL_TOKENS = re.compile(r"^(\||\|\||&&|;|>>?|<|\w+=.*)$|\$\(|`")
SERVER_WAIT_S = 120
NOTEBOOK = ROOT / "docs" / "notebooks" / "latent-walk.ipynb"

ALL = [block for page in pages() for block in blocks(page)]
RUN = [block for block in ALL if block.language in ("console", "python") and block.marker is None]
QUICKSTART = next(block for block in RUN if "ganforge.demo digits" in "\n".join(block.lines))
README = [block for block in blocks(ROOT / "README.md") if block.language == "console"]


@contextmanager
def _inside(folder: Path):
    with pytest.MonkeyPatch.context() as patch:  # the working directory restored after, as after a test
        patch.chdir(folder)
        yield


def _environment() -> dict[str, str]:
    """This interpreter's `python` and `ganforge` first on PATH, as in an activated environment."""
    return dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")


def _toy(text: str) -> str:
    for pattern, replacement in TOY_SIZE:
        text = pattern.sub(replacement, text)
    return text


def _run_command(text: str, shown: tuple[str, ...], folder: Path) -> tuple[int, str]:
    """(exit status, what it printed) of one command, run in `folder`."""
    words = shlex.split(text.replace("\\\n", " "), comments=True)
    if text.startswith(SERVERS):
        return _serve(words, shown, folder)
    if words[0] == "ganforge" and not any(SHELL_TOKENS.search(word) for word in words):
        with _inside(folder):
            result = CliRunner().invoke(main, words[1:])
        crashed = result.exception is not None and not isinstance(result.exception, SystemExit)
        crash = "".join(traceback.format_exception(result.exception)) if crashed else ""
        return result.exit_code, result.output + crash
    done = subprocess.run(
        ["bash", "-c", text], cwd=folder, env=_environment(), capture_output=True, text=True, timeout=600
    )
    return done.returncode, done.stdout + done.stderr


def _serve(words: list[str], shown: tuple[str, ...], folder: Path) -> tuple[int, str]:
    """Start a server, read its output until the block's last shown line appears, then Ctrl-C it."""
    process = subprocess.Popen(
        [sys.executable, "-m", *words], cwd=folder, env=_environment(), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, preexec_fn=_ctrl_c_as_on_a_terminal,
    )  # fmt: skip
    watchdog = threading.Timer(SERVER_WAIT_S, process.kill)  # a server that never says it is up
    watchdog.start()
    try:
        lines = []
        for line in process.stdout:
            lines.append(line)
            if not missing_shown_lines(shown[-1:], line):
                break
        _wait_until_it_answers("".join(lines))  # a user's Ctrl-C comes once the page is up, not while it starts
        process.send_signal(signal.SIGINT)
        rest = process.communicate(timeout=60)[0]
        return process.returncode, "".join(lines) + rest
    finally:
        watchdog.cancel()
        process.kill()
        process.wait()


def _ctrl_c_as_on_a_terminal() -> None:
    """A server started here takes Ctrl-C as one started at a terminal does: a test run in the background of a
    shell without job control (as CI scripts are) inherits SIGINT ignored, and so would the server."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_until_it_answers(output: str) -> None:
    """Until the server whose URL `output` prints answers a request (at most SERVER_WAIT_S)."""
    found = re.search(r"http://[^\s)]+", output)
    if found is None:
        return
    deadline = time.monotonic() + SERVER_WAIT_S
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(found.group(0), timeout=5):
                return
        except OSError:
            time.sleep(0.1)


def _expected_status(command: Command) -> int:
    if command.text.startswith(SERVERS):
        return 130  # Ctrl-C
    return 2 if any(line.startswith("error: ") for line in command.shown) else 0


def run_block(block: Block, folder: Path) -> str | None:
    """None when every command of the block ran as shown; else what went wrong, naming the page and line."""
    if block.language == "python":
        return _run_python(block, folder)
    for command in block.commands():
        text = _toy(command.text)
        status, output = _run_command(text, command.shown, folder)
        where = f"{block.page}:{command.line}: `$ {text}`"
        if status != _expected_status(command):
            return f"{where} exited {status}, not {_expected_status(command)}; it printed:\n{output[-3000:]}"
        missing = missing_shown_lines(command.shown, output)
        if missing:
            return f"{where} did not print the shown line {missing[0]!r}; it printed:\n{output[-3000:]}"
    return None


def _run_python(block: Block, folder: Path) -> str | None:
    source = "\n".join(block.lines)
    with _inside(folder):
        try:
            exec(compile(source, block.where, "exec"), {"__name__": "__docs__"})
        except Exception:
            return f"{block.where}: the python block failed:\n{traceback.format_exc()}"
    return None


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> tuple[Path, str | None]:
    """The folder every block runs in, after the Quickstart's block ran there (and how that went)."""
    folder = tmp_path_factory.mktemp("docs")
    return folder, run_block(QUICKSTART, folder)


@pytest.mark.parametrize("block", RUN, ids=[block.where for block in RUN])
def test_every_block_runs_and_prints_what_it_shows(block, workspace):
    folder, quickstart_failure = workspace
    if block is QUICKSTART:
        assert quickstart_failure is None, quickstart_failure
        return
    assert quickstart_failure is None, f"the Quickstart's block, which the others use, failed: {quickstart_failure}"
    failure = run_block(block, folder)
    assert failure is None, failure


def test_the_notebook_runs_against_the_quickstart_run(workspace):
    from nbclient import NotebookClient

    folder, quickstart_failure = workspace
    assert quickstart_failure is None, quickstart_failure
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(
        notebook, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(folder)}}
    ).execute()
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert all(cell.execution_count for cell in code)
    shown = [output for cell in code for output in cell.outputs if "image/png" in output.get("data", {})]
    assert len(shown) == 3  # the seeds, the walk, the target beside its projection


def test_a_block_that_prints_something_else_fails_naming_its_page_and_line(tmp_path):
    """The check itself: a shown line the command does not print, and an unexpected exit status, are failures."""
    block = Block("docs/x.md", 10, "console", ("$ ganforge --version", "ganforge, version 0.0.0-not-this"), None)
    failure = run_block(block, tmp_path)
    assert failure is not None and failure.startswith("docs/x.md:11: `$ ganforge --version` did not print")
    block = Block("docs/x.md", 10, "console", ("$ ganforge train --data missing.zip --outdir runs",), None)
    assert run_block(block, tmp_path).startswith(
        "docs/x.md:11: `$ ganforge train --data missing.zip --outdir runs` exit"
    )
    shown = ("$ ganforge --version", "ganforge, version ...")
    assert run_block(Block("docs/x.md", 10, "console", shown, None), tmp_path) is None


def test_every_block_is_run_or_marked_with_a_kind_and_a_reason():
    for block in [*ALL, *README]:
        if block.marker is not None:
            kind, reason = block.marker
            assert kind in KINDS, f"{block.where}: marker {reason!r}: KIND must be one of {', '.join(KINDS)}"
            assert len(reason) > 10, f"{block.where}: say why the block is not run"
            assert block.language in ("console", "python"), f"{block.where}: only console and python blocks are marked"
        assert block.language not in SHELL_LANGUAGES, f"{block.where}: shell commands go in a `console` block"
        if block.language != "console":
            assert not any(line.startswith("$ ") for line in block.lines), f"{block.where}: a command outside console"
        else:
            assert block.commands(), f"{block.where}: a console block without a `$ ` command"


def _commands(block: Block) -> list[str]:
    return [" ".join(shlex.split(command.text, comments=True)) for command in block.commands()]


def test_the_readme_runs_the_quickstarts_commands_and_marks_the_rest():
    """The README's quickstart is the Quickstart page's block (which runs above); its other blocks are marked."""
    unmarked = [block for block in README if block.marker is None]
    assert len(unmarked) == 1, [block.where for block in unmarked]
    assert _commands(unmarked[0]) == _commands(QUICKSTART)
    assert len(Path(ROOT / "README.md").read_text().splitlines()) <= 250
