"""Progress bars are drawn on a terminal and nowhere else (a pipe or a log file gets no carriage-return updates);
off a terminal a stage of long work writes a few plain lines instead."""

import io
import math
import re
import subprocess
import sys
import time

import pytest

from ganforge import progress
from ganforge.progress import Stage, duration, progress_bar
from launch_helpers import tiny_archive
from progress_helpers import Terminal, off_a_terminal, on_a_terminal


def test_a_bar_draws_on_a_terminal(monkeypatch):
    monkeypatch.setattr(sys, "stderr", Terminal())
    assert list(progress_bar(range(3), desc="count")) == [0, 1, 2]
    assert "\r" in sys.stderr.getvalue() and "count" in sys.stderr.getvalue()


def test_a_bar_is_silent_off_a_terminal_and_still_iterates(monkeypatch):
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert list(progress_bar(range(3), desc="count")) == [0, 1, 2]
    assert sys.stderr.getvalue() == ""
    monkeypatch.setattr(sys, "stderr", Terminal())
    assert list(progress_bar(range(3), enabled=False)) == [0, 1, 2] and sys.stderr.getvalue() == ""


def test_a_command_piped_to_a_file_writes_no_bar(tmp_path):
    archive = tiny_archive(tmp_path)
    argv = [sys.executable, "-m", "ganforge", "dataset", "verify", str(archive)]
    done = subprocess.run(argv, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "\r" not in done.stderr + done.stdout and "verify:" not in done.stderr


def _lines(stream: io.StringIO) -> list[str]:
    return stream.getvalue().splitlines()


def test_a_stage_off_a_terminal_writes_a_line_when_it_starts_and_one_with_its_duration_when_it_ends(monkeypatch):
    off_a_terminal(monkeypatch)
    with Stage("export: check", total=4) as stage:
        with stage.part("eager"):
            stage.update(2)
        with stage.part("exported"):
            stage.update(2)
    first, last = _lines(sys.stdout)
    assert first == "export: check: started" and "\r" not in sys.stdout.getvalue() and sys.stderr.getvalue() == ""
    assert re.fullmatch(r"export: check: done in \d+\.\d s \(eager \d+\.\d s, exported \d+\.\d s\)", last), last
    with pytest.raises(ValueError), Stage("export: trace"):
        raise ValueError("broken")
    assert re.fullmatch(r"export: trace: stopped after \d+\.\d s", _lines(sys.stdout)[-1])


def test_a_stage_on_a_terminal_draws_a_bar_and_writes_no_lines(monkeypatch):
    on_a_terminal(monkeypatch)
    with Stage("metrics: 8 real images", total=8) as stage:
        stage.update(8)
    with Stage("export: trace"):
        pass
    drawn = sys.stderr.getvalue()
    assert "\r" in drawn and "metrics: 8 real images: 100%" in drawn and "8/8" in drawn
    assert "export: trace: running for 00:00" in drawn and sys.stdout.getvalue() == ""


def test_a_long_stage_off_a_terminal_reports_at_doubling_intervals(monkeypatch):
    monkeypatch.setattr(progress, "FIRST_REPORT_S", 0.02)
    off_a_terminal(monkeypatch)
    began = time.monotonic()
    with Stage("metrics: 768 generated images", total=768) as stage:
        stage.update(340)
        while len(_lines(sys.stdout)) < 7 and time.monotonic() - began < 30:
            time.sleep(0.01)
    seconds = time.monotonic() - began
    running = _lines(sys.stdout)[1:-1]
    assert len(running) >= 6 and all(re.fullmatch(r".*: 340/768 img after \d+\.\d s", line) for line in running)
    # at 0.02 s, 0.04 s, 0.08 s, ...: a few lines however long it runs (one more for the clock's rounding)
    assert len(running) <= math.log2(seconds / 0.02) + 2
    with Stage("export: int8 quantization"):
        while len(_lines(sys.stdout)) < len(running) + 4:
            time.sleep(0.01)
    assert _lines(sys.stdout)[-2].startswith("export: int8 quantization: running for ")


def test_a_stage_of_stages_has_only_its_start_and_end_lines_and_a_disabled_one_nothing(monkeypatch):
    monkeypatch.setattr(progress, "FIRST_REPORT_S", 0.0)
    off_a_terminal(monkeypatch)
    with Stage("metrics: kid50k_full", bar=False), Stage("on rank 1", enabled=False):
        time.sleep(0.05)
    assert [line.split(":")[-1].split()[0] for line in _lines(sys.stdout)] == ["started", "done"]
    on_a_terminal(monkeypatch)
    with Stage("metrics: kid50k_full", bar=False), Stage("on rank 1", total=3, enabled=False) as hidden:
        hidden.update(3)
    assert sys.stderr.getvalue() == sys.stdout.getvalue() == ""


def test_durations_read_as_seconds_minutes_or_hours():
    assert [duration(s) for s in (4.24, 59.96, 187, 7500)] == ["4.2 s", "1 min 00 s", "3 min 07 s", "2 h 05 min"]


@pytest.mark.parametrize("terminal", [False, True])
def test_a_counted_stage_that_turns_out_long_says_how_long_once_with_the_faster_setting(monkeypatch, terminal):
    (on_a_terminal if terminal else off_a_terminal)(monkeypatch)
    clock = [0.0]
    monkeypatch.setattr(progress.time, "monotonic", lambda: clock[0])
    with Stage("project: target 1 of 1", total=1000, unit="step", faster="--perceptual none is faster") as stage:
        for _ in range(3):  # 3 steps in 12 s: 1000 take 66 min 40 s
            clock[0] += 4
            stage.update()
        clock[0] += 4
        stage.update()
    with Stage("export: check", total=100) as quick:  # 100 images in 11 s: no estimate
        clock[0] += 11
        quick.update(100)
    shown = sys.stderr.getvalue() if terminal else sys.stdout.getvalue()
    line = "project: target 1 of 1: about 1 h 06 min in all at 0.25 step/s here; --perceptual none is faster"
    assert shown.count(line) == 1 and "export: check: about" not in shown
