"""Output folders are checked before any work: an impossible or unwritable one is one line naming the flag, exit 2,
and nothing written anywhere."""

import subprocess
import sys
from pathlib import Path

import pytest

from ganforge.errors import UserError
from ganforge.outputs import check_writable_folder
from launch_helpers import tiny_archive


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    return tiny_archive(tmp_path_factory.mktemp("data"))


def test_a_folder_that_can_be_made_passes_and_nothing_is_created(tmp_path):
    check_writable_folder(tmp_path / "runs" / "deeper", "--outdir")
    check_writable_folder(tmp_path, "--outdir")
    assert list(tmp_path.iterdir()) == []


def test_a_path_through_a_file_names_the_file(tmp_path):
    (tmp_path / "notes.txt").write_text("")
    with pytest.raises(UserError, match=r"^--outdir .*notes.txt/runs: .*notes.txt is a file"):
        check_writable_folder(tmp_path / "notes.txt" / "runs", "--outdir")


def test_a_folder_where_nothing_can_be_written_says_why():
    with pytest.raises(UserError, match=r"^--outdir /proc/runs: cannot write in /proc \(.+\); pass a folder"):
        check_writable_folder(Path("/proc/runs"), "--outdir")


@pytest.mark.parametrize("command", [
    ["train", "--data", "{archive}", "--outdir", "notes.txt/runs", "--cfg", "tiny"],
    ["train", "--data", "{archive}", "--outdir", "notes.txt/runs", "--cfg", "tiny", "--dry-run"],
    ["metrics", "--real", "{archive}", "--fake", "{archive}", "--metrics", "swd16k", "--outdir", "notes.txt/m"],
    ["dataset", "build", "{archive}", "/proc/ds.zip", "--resolution", "8"],
])  # fmt: skip
def test_commands_check_their_output_before_working(archive, tmp_path, command):
    (tmp_path / "notes.txt").write_text("")
    argv = [arg.format(archive=archive) for arg in command]
    done = subprocess.run([sys.executable, "-m", "ganforge", *argv], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(("error: --outdir", "error: DEST")), done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
