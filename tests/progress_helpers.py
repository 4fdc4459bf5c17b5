"""Where a command's progress goes: stderr as a terminal (bars) or both streams off one (lines), for tests that call
commands in this process."""

import io
import sys


class Terminal(io.StringIO):
    """A stream that says it is a terminal, as progress.py asks before it draws a bar."""

    def isatty(self) -> bool:
        return True


def on_a_terminal(monkeypatch) -> None:
    """stderr a terminal, stdout a pipe."""
    monkeypatch.setattr(sys, "stderr", Terminal())
    monkeypatch.setattr(sys, "stdout", io.StringIO())


def off_a_terminal(monkeypatch) -> None:
    """Both streams pipes (a batch job's log)."""
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    monkeypatch.setattr(sys, "stdout", io.StringIO())
