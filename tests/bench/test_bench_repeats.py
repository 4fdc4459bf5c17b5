"""`--repeat`: the timed rounds grouped into repeats, min / median / max of img/s and of each phase, and the
warning when the repeats disagree; all from injected timings (a fake clock, made-up repeats), never the wall clock."""

import json
import math

import pytest
import torch
from click.testing import CliRunner

from ganforge.bench import measure as measure_module
from ganforge.bench.measure import Measurement, Rounds, time_rounds
from ganforge.bench.spread import SPREAD_LIMIT, spread_of, spread_warning
from ganforge.cli import main

INTERVALS = {"G_main": 1, "G_reg": 4, "D_main": 1, "D_reg": 16, "EMA": 1}


def _repeat(step_scale: float) -> dict[str, float]:
    """Phase milliseconds of one repeat, every phase `step_scale` times a base timing."""
    base = {"G_main": 10.0, "G_reg": 8.0, "D_main": 12.0, "D_reg": 16.0, "EMA": 1.0}  # a step of 26 ms
    return {name: ms * step_scale for name, ms in base.items()}


def test_img_per_s_and_phase_spreads_come_from_the_repeats():
    m = Measurement(4, 2, 1, 1, (_repeat(1.0), _repeat(2.0), _repeat(0.5)), INTERVALS, 1e9, 0.1, None)
    assert m.repeat_iteration_ms == [26.0, 52.0, 13.0]
    assert m.repeat_img_per_s == [8000 / 26, 8000 / 52, 8000 / 13]  # 4 images x 2 ranks per step
    assert m.img_per_s == 8000 / 26 and m.iteration_ms == pytest.approx(26.0)
    assert m.phase_ms == _repeat(1.0)
    spread = spread_of(m.repeat_img_per_s)
    assert (spread.low, spread.median, spread.high) == (8000 / 52, 8000 / 26, 8000 / 13)
    assert spread.relative == pytest.approx((1 / 13 - 1 / 52) * 26)  # 1.5
    even = Measurement(4, 1, 1, 1, (_repeat(1.0), _repeat(2.0)), INTERVALS, 1e9, 0.1, None)
    assert even.img_per_s == pytest.approx((4000 / 26 + 4000 / 52) / 2)  # the median of an even count: the mean
    assert even.iteration_ms == pytest.approx(4000 / even.img_per_s)


def test_the_spread_warning_starts_above_the_limit_and_names_the_cause_and_the_fix():
    assert spread_warning(spread_of([100.0, 100.0, 100.0]), 3, "cpu") is None
    at_limit = spread_of([90.0, 100.0, 90.0 + 100 * SPREAD_LIMIT])
    assert at_limit.relative == pytest.approx(SPREAD_LIMIT) and spread_warning(at_limit, 3, "cpu") is None
    wide = spread_of([9.5, 15.0, 24.0])  # the two runs of the report, and one between
    line = spread_warning(wide, 3, "cuda")
    assert line.startswith("warning: img/s spread from 9.5 to 24 over 3 repeats (97% of the median 15")
    assert "another load on the machine" in line and "nvidia-smi" in line and "--repeat" in line
    assert "\n" not in line and "top" in spread_warning(wide, 3, "cpu")


class _FakeClock:
    """perf_counter's stand-in: each call of a phase advances it by the next scripted duration."""

    def __init__(self, durations_ms: list[float]):
        self.now, self.durations = 0.0, list(durations_ms)

    def __call__(self) -> float:
        return self.now

    def phase(self, _trainer) -> None:
        self.now += self.durations.pop(0) / 1000


def test_time_rounds_groups_the_rounds_after_warm_up_into_repeats_of_medians():
    # Rounds of (A, B): one warm-up round (ignored), then two repeats of three rounds; the second repeat is slowed.
    script = [(500, 500), (10, 1), (12, 2), (11, 3), (40, 7), (30, 5), (35, 6)]
    clock = _FakeClock([ms for pair in script for ms in pair])
    calls = {"A": (1, clock.phase), "B": (2, clock.phase)}
    counted = []
    repeats = time_rounds(None, calls, torch.device("cpu"), Rounds(3, 1, 2), lambda: counted.append(1), clock)
    assert [{k: pytest.approx(v) for k, v in r.items()} for r in repeats] == [{"A": 11, "B": 2}, {"A": 35, "B": 6}]
    assert len(counted) == 14 and not clock.durations


def test_bench_prints_the_spread_warning_on_stderr_and_puts_it_in_the_json(monkeypatch):
    def scripted(trainer, calls, device, rounds, on_call=None, clock=None):
        scales = (1.0, 2.5, 1.2)[: rounds.repeat]
        return tuple({name: 10.0 * scale for name in calls} for scale in scales)

    monkeypatch.setattr(measure_module, "time_rounds", scripted)
    args = ["bench", "--cfg", "tiny", "--resolution", "8", "--channels", "1", "--steps", "1", "--warmup", "0",
            "--device", "cpu", "--aug", "noaug", "--batch-gpu", "4"]  # fmt: skip
    result = CliRunner().invoke(main, [*args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    r = json.loads(result.stdout)
    step = 10.0 * sum(1 / i for i in INTERVALS.values())
    assert r["repeat"] == 3 and math.isclose(r["img_per_s"], 4000 / (1.2 * step))
    assert math.isclose(r["spread"]["img_per_s"]["min"], 4000 / (2.5 * step))
    assert r["phases"]["G_main"] == {"ms": 12.0, "ms_min": 10.0, "ms_max": 25.0, "interval": 1}
    assert result.stderr.strip() == r["spread"]["warning"] and "another load on the machine" in result.stderr
    table = CliRunner().invoke(main, [*args, "--repeat", "2"], catch_exceptions=False)
    fast, slow = 4000 / step, 4000 / (2.5 * step)  # 120.8 and 48.3: (fast - slow) / their mean = 86%
    assert f"min {slow:.1f}, max {fast:.1f} over 2 repeats: 86% spread" in table.stdout
    quiet = CliRunner().invoke(main, [*args, "--repeat", "1"], catch_exceptions=False)
    assert quiet.stderr == "" and "1 repeat, so no spread" in quiet.stdout


@pytest.mark.parametrize("repeat", ["0", "101", "nan"])
def test_bench_refuses_a_repeat_out_of_range(repeat):
    result = CliRunner().invoke(main, ["bench", "--cfg", "tiny", "--device", "cpu", "--repeat", repeat])
    assert result.exit_code == 2 and "--repeat" in result.output and "Traceback" not in result.output
