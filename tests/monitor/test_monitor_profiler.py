"""The profiler's step window, its files, and how label times are attributed (innermost label wins)."""

import json

import pytest
import torch

from ganforge.monitor.probe import Probe
from ganforge.monitor.profiler import LABELS, OTHER, TRACE_NAME, StepProfiler, label_times


def test_each_moment_goes_to_the_innermost_label_and_the_parts_add_up_to_the_steps():
    spans = [("step", 0, 100), ("data", 0, 10), ("G main", 10, 50), ("all-reduce", 40, 45), ("D main", 50, 90),
             ("all-reduce", 80, 90), ("step", 200, 260), ("G main", 195, 230), ("EMA", 250, 258),
             ("G main", 300, 400)]  # fmt: skip
    total, times = label_times(spans)
    assert total == 160
    # step 1: data 10, G main 40 - 5, all-reduce 5 + 10, D main 40 - 10, other 10; step 2 (clipped): G main 30, ...
    expected = {"data": 10, "G main": 35 + 30, "all-reduce": 15, "D main": 30, "EMA": 8, "G reg": 0, "D reg": 0}
    assert times == expected | {OTHER: 10 + 22}
    assert sum(times.values()) == total


def _busy(label: str, probe: Probe) -> None:
    with probe.label(label):
        torch.randn(64, 64) @ torch.randn(64, 64)


def test_two_profiled_steps_after_the_warm_up_write_a_trace_and_a_summary(tmp_path):
    probe, said = Probe(), []
    profiler = StepProfiler(2, 16, tmp_path / "profile", torch.device("cpu"), probe, said.append)
    for nimg in (0, 8, 16, 24, 32):
        with profiler.step(nimg):
            assert probe.profiling == (nimg in (16, 24))
            for label in LABELS:
                _busy(label, probe)
    assert not probe.profiling and said and "profile of 2 steps" in said[0]
    names = {event.get("name") for event in json.loads((tmp_path / "profile" / TRACE_NAME).read_text())["traceEvents"]}
    assert {"step", *LABELS} <= names
    summary = (tmp_path / "profile" / "summary.txt").read_text()
    assert summary.startswith("ganforge profile: 2 steps from 0.016 kimg")
    rows = {line.split("%")[0].rsplit(None, 1)[0].strip(): float(line.split("%")[0].rsplit(None, 1)[1])
            for line in summary.split("top 20")[0].splitlines() if line.startswith("  ")}  # fmt: skip
    ms_per_step = [float(line.split()[-2]) for line in summary.splitlines() if line.endswith("ms/step")]
    assert set(rows) == {*LABELS, OTHER, "total"} and len(ms_per_step) == len(LABELS) + 1
    assert all(ms > 0 for ms in ms_per_step[: len(LABELS)])  # every label took time
    assert rows["total"] == 100.0  # the exact sum, printed with one decimal; each printed share is off by <= 0.05
    assert sum(rows[label] for label in (*LABELS, OTHER)) == pytest.approx(100, abs=0.05 * (len(LABELS) + 1))
    profiler.finish()  # at the end of the run: already written, nothing more
    assert len(said) == 1


def test_a_run_that_ends_within_the_warm_up_says_the_profiler_did_not_start(tmp_path):
    said = []
    profiler = StepProfiler(2, 16, tmp_path / "profile", torch.device("cpu"), Probe(), said.append)
    with profiler.step(0):
        pass
    assert profiler.finish() is None and not (tmp_path / "profile").exists()
    assert said == [said[0]] and said[0].startswith("warning: the profiler did not start")


def test_a_failed_run_stops_the_profiler_without_writing(tmp_path):
    probe = Probe()
    profiler = StepProfiler(5, 0, tmp_path / "profile", torch.device("cpu"), probe, print)
    with pytest.raises(RuntimeError), profiler.step(0):
        raise RuntimeError("a failing step")
    profiler.abort()
    assert not probe.profiling and not (tmp_path / "profile").exists()


def test_probe_times_sections_only_when_asked():
    probe = Probe(torch.device("cpu"), timing=True)
    with probe.section("fwd_bwd"):
        torch.randn(256, 256) @ torch.randn(256, 256)
    seconds = probe.drain()
    assert seconds["fwd_bwd"] > 0 and seconds["optimizer"] == 0 and probe.drain()["fwd_bwd"] == 0
    off = Probe(torch.device("cpu"))
    with off.section("fwd_bwd"):
        pass
    assert off.drain() == {"fwd_bwd": 0.0, "optimizer": 0.0, "allreduce": 0.0}
