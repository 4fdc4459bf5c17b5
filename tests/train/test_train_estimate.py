"""A run says its own speed and the time the rest takes, measured on the machine it runs on, once about ten seconds
of steps have passed (before the first tick's status line, minutes away on a CPU), never from a figure elsewhere."""

import pytest
import torch

from ganforge.train import logs


@pytest.fixture
def clock(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(logs.time, "monotonic", lambda: now[0])
    return now


def _lines(run_dir) -> list[str]:
    return [line for line in (run_dir / "log.txt").read_text().splitlines() if line.startswith("estimate")]


def test_the_estimate_comes_once_after_ten_seconds_of_steps_from_the_end_of_the_first(tmp_path, clock):
    log = logs.RunLog(tmp_path, total_nimg=40_000, start_nimg=0)
    log.step(16)  # the first step (compiling, allocating) ends at 100 s: the clock starts there
    for nimg, at in ((32, 105.0), (48, 109.9)):
        clock[0] = at
        log.step(nimg)
    assert _lines(tmp_path) == []
    clock[0] = 112.0  # 12 s after the first step, 320 images later: 26.7 img/s
    log.step(336)
    clock[0] = 130.0
    log.step(800)
    log.close()
    remaining = (40_000 - 336) / (320 / 12)
    assert _lines(tmp_path) == [
        f"estimate: 26.7 img/s on this machine over 320 images; the remaining 39.664 kimg take about "
        f"{logs.hms(remaining)} at that speed (each tick's status line updates it)"
    ]


def test_a_short_rest_or_a_status_line_first_says_nothing(tmp_path, clock):
    short = tmp_path / "short"
    short.mkdir()
    log = logs.RunLog(short, total_nimg=400, start_nimg=0)
    log.step(16)
    clock[0] += 11
    log.step(32)  # the rest, 368 images at 1.5 img/s, takes 4 minutes: said; at 160 img/s it would not be
    log.close()
    assert len(_lines(short)) == 1
    fast = tmp_path / "fast"
    fast.mkdir()
    log = logs.RunLog(fast, total_nimg=4000, start_nimg=0)
    log.step(16)
    clock[0] += 11
    log.step(3000)  # 2984 images in 11 s: the last 1000 take 4 s
    log.close()
    assert _lines(fast) == []
    ticked = tmp_path / "ticked"
    ticked.mkdir()
    log = logs.RunLog(ticked, total_nimg=40_000, start_nimg=0)
    log.step(16)
    clock[0] += 5
    log.tick(160, 1, {}, torch.device("cpu"))  # a status line (with its eta) came first
    clock[0] += 11
    log.step(400)
    log.close()
    assert _lines(ticked) == [] and "eta" in (ticked / "log.txt").read_text()
