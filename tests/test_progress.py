"""Progress bars are drawn on a terminal and nowhere else (a pipe or a log file gets no carriage-return updates)."""

import io
import subprocess
import sys

from ganforge.progress import progress_bar
from launch_helpers import tiny_archive


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_bar_draws_on_a_terminal(monkeypatch):
    monkeypatch.setattr(sys, "stderr", _Terminal())
    assert list(progress_bar(range(3), desc="count")) == [0, 1, 2]
    assert "\r" in sys.stderr.getvalue() and "count" in sys.stderr.getvalue()


def test_a_bar_is_silent_off_a_terminal_and_still_iterates(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert list(progress_bar(range(3), desc="count")) == [0, 1, 2]
    assert sys.stderr.getvalue() == ""
    monkeypatch.setattr(sys, "stderr", _Terminal())
    assert list(progress_bar(range(3), enabled=False)) == [0, 1, 2] and sys.stderr.getvalue() == ""


def test_a_command_piped_to_a_file_writes_no_bar(tmp_path):
    archive = tiny_archive(tmp_path)
    argv = [sys.executable, "-m", "ganforge", "dataset", "verify", str(archive)]
    done = subprocess.run(argv, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "\r" not in done.stderr + done.stdout and "verify:" not in done.stderr
