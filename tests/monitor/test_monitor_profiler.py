"""The profiler's step window (extended until every phase ran, within a bound), its files (a small gzipped trace by
default, torch's own stderr notes routed to a file), and how label times are attributed (innermost label wins)."""

import gzip
import json

import pytest
import torch

from ganforge.monitor.probe import Probe
from ganforge.monitor.profiler import (
    LABELS,
    MAX_WINDOW_STEPS,
    MESSAGES_NAME,
    OTHER,
    PHASE_LABELS,
    TRACE_NAME,
    StepProfiler,
    label_calls,
    label_times,
    window_limit,
)

EVERY_STEP = dict.fromkeys(PHASE_LABELS, 1)
CPU = torch.device("cpu")


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
    assert label_calls(spans) == {"data": 1, "G main": 2, "all-reduce": 2, "D main": 1, "EMA": 1}  # not 300-400


def _busy(label: str, probe: Probe) -> None:
    with probe.label(label):
        torch.randn(64, 64) @ torch.randn(64, 64)


def _trace_names(folder) -> set:
    with gzip.open(folder / TRACE_NAME, "rt") as trace:
        return {event.get("name") for event in json.load(trace)["traceEvents"]}


def _rows(summary: str) -> dict[str, str]:
    """label -> the rest of its row in summary.txt's table."""
    table = summary.split("share of the window:")[1].split("top 20")[0]
    return {line.split()[0] if line.split()[0] not in ("G", "D") else " ".join(line.split()[:2]): line
            for line in table.splitlines()[2:] if line.startswith("  ")}  # fmt: skip


def _shares(summary: str) -> dict[str, float]:
    return {name: float(row.split("%")[0].split()[-1]) for name, row in _rows(summary).items() if "%" in row}


def test_two_profiled_steps_after_the_warm_up_write_a_trace_and_a_summary(tmp_path):
    probe, said = Probe(), []
    profiler = StepProfiler(2, 16, tmp_path / "profile", CPU, probe, said.append, EVERY_STEP)
    for nimg in (0, 8, 16, 24, 32):
        with profiler.step(nimg):
            assert probe.profiling == (nimg in (16, 24))
            for label in LABELS:
                _busy(label, probe)
    assert not probe.profiling and said and "profile of 2 steps in" in said[0]
    assert {"step", *LABELS} <= _trace_names(tmp_path / "profile")
    summary = (tmp_path / "profile" / "summary.txt").read_text()
    assert summary.startswith("ganforge profile: 2 steps from 0.016 kimg")
    assert "(input shapes, memory and Python stacks not recorded)" in summary
    rows, shares = _rows(summary), _shares(summary)
    assert set(rows) == {*LABELS, OTHER, "total"}
    assert all(rows[label].split()[-2] == "2" for label in LABELS)  # every label ran once per step
    assert all(float(rows[label].split()[-1]) > 0 for label in LABELS)  # ms per call
    assert shares["total"] == 100.0  # the exact sum, printed with one decimal; each printed share is off by <= 0.05
    assert sum(shares[label] for label in (*LABELS, OTHER)) == pytest.approx(100, abs=0.05 * (len(LABELS) + 1))
    profiler.finish()  # at the end of the run: already written, nothing more
    assert len(said) == 1


def _run_steps(profiler: StepProfiler, probe: Probe, count: int, labels_of_step) -> list[bool]:
    """`count` steps of 8 images; step i runs `labels_of_step(i)`. -> whether each step was profiled."""
    profiled = []
    for i in range(count):
        with profiler.step(8 * i):
            profiled.append(probe.profiling)
            for label in labels_of_step(i):
                _busy(label, probe)
    return profiled


def test_the_window_is_extended_until_every_phase_ran(tmp_path):
    probe, said = Probe(), []
    phases = {"G main": 1, "G reg": 4, "D main": 1, "D reg": 16}
    profiler = StepProfiler(2, 8, tmp_path / "profile", CPU, probe, said.append, phases)

    def labels(i: int) -> list[str]:  # R1 on step 6 only, path length on steps 4 and 8
        return ["G main", "D main", *(["G reg"] if i % 4 == 0 else []), *(["D reg"] if i == 6 else [])]

    assert _run_steps(profiler, probe, 10, labels) == [False] + [True] * 6 + [False] * 3  # steps 1 to 6
    assert said[0].startswith("profile of 6 steps (2 asked, extended until every phase ran) in ")
    rows = _rows((tmp_path / "profile" / "summary.txt").read_text())
    assert [rows[label].split()[-2] for label in PHASE_LABELS] == ["6", "1", "6", "1"]  # calls in the window


def test_a_phase_that_never_runs_ends_the_window_at_its_bound_and_the_summary_says_so(tmp_path):
    probe, said = Probe(), []
    phases = {"G main": 1, "D main": 1, "D reg": 100}  # no G reg: a run with --pl-weight 0; R1 rarer than the cap
    profiler = StepProfiler(3, 0, tmp_path / "profile", CPU, probe, said.append, phases)
    profiled = _run_steps(profiler, probe, 70, lambda i: ["data", "G main", "D main", "EMA"])
    assert profiled == [True] * MAX_WINDOW_STEPS + [False] * (70 - MAX_WINDOW_STEPS)
    summary = (tmp_path / "profile" / "summary.txt").read_text()
    assert summary.startswith("ganforge profile: 64 steps (3 asked; D reg did not run: the window's bound is 64 steps)")
    rows = _rows(summary)
    assert "G reg" not in rows  # not a phase of this run
    assert (
        rows["D reg"].strip()
        == "D reg        not run in these 64 steps: it runs every 100 steps; --profile 100 covers it"
    )
    assert "0.0%" not in rows["D reg"] and "D reg did not run" in said[0]


def test_a_run_that_ends_before_a_phase_ran_says_so(tmp_path):
    probe, said = Probe(), []
    profiler = StepProfiler(2, 0, tmp_path / "profile", CPU, probe, said.append, {"G main": 1, "D reg": 16})
    _run_steps(profiler, probe, 5, lambda i: ["G main"])
    profiler.finish()  # the end of the run, before R1's turn
    summary = (tmp_path / "profile" / "summary.txt").read_text()
    assert summary.startswith("ganforge profile: 5 steps (2 asked; D reg did not run: the run ended first)")
    assert (
        _rows(summary)["D reg"]
        .strip()
        .endswith("not run in these 5 steps: it runs every 16 steps; the run ended first")
    )


def test_the_window_bound_is_the_longest_interval_capped():
    assert window_limit(5, {"G main": 1, "D reg": 16}) == 16
    assert window_limit(40, {"G main": 1, "D reg": 16}) == 40
    assert window_limit(5, {"D reg": 10**6}) == MAX_WINDOW_STEPS
    assert window_limit(5, {}) == 5


def _raw_profiler_stderr(capfd) -> str:
    """What this torch build prints on stderr for a bare profiler start and stop."""
    capfd.readouterr()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
        torch.ones(2) + 1
    return capfd.readouterr().err


def test_torchs_own_stderr_notes_go_to_a_file_not_to_stderr(tmp_path, capfd):
    raw = _raw_profiler_stderr(capfd)
    probe = Probe()
    profiler = StepProfiler(1, 0, tmp_path / "profile", CPU, probe, print, {})
    with profiler.step(0):
        _busy("G main", probe)
    captured = capfd.readouterr()
    assert "USDT" not in captured.err and "profiler_st" not in captured.err and captured.err == ""
    routed = tmp_path / "profile" / MESSAGES_NAME
    notes = [line.split("] ", 1)[-1] for line in raw.splitlines() if line.strip()]
    assert routed.exists() == bool(notes)
    for note in notes:  # this build's notes (`profiler_start`, `profiler_stop`) are all in the file
        assert note in routed.read_text()


def test_detail_records_shapes_and_memory_into_a_larger_trace_and_its_warning_is_routed(tmp_path, capfd):
    sizes = {}
    for detail in (False, True):
        probe, out = Probe(), tmp_path / f"detail-{detail}"
        kept = [torch.randn(256) for _ in range(4)]  # allocated before profiling, freed during it
        profiler = StepProfiler(1, 0, out, CPU, probe, print, {}, detail=detail)
        with profiler.step(0):
            kept.clear()
            _busy("G main", probe)
        with gzip.open(out / TRACE_NAME, "rt") as trace:
            events = json.load(trace)["traceEvents"]
        sizes[detail] = (out / TRACE_NAME).stat().st_size
        assert any("Input Dims" in e.get("args", {}) for e in events) == detail
        assert any(e.get("name") == "[memory]" for e in events) == detail
        err = capfd.readouterr().err
        assert "CPUAllocator" not in err and "USDT" not in err
    assert sizes[True] > 1.5 * sizes[False]


def test_a_run_that_ends_within_the_warm_up_says_the_profiler_did_not_start(tmp_path):
    said = []
    profiler = StepProfiler(2, 16, tmp_path / "profile", CPU, Probe(), said.append, EVERY_STEP)
    with profiler.step(0):
        pass
    assert profiler.finish() is None and not (tmp_path / "profile").exists()
    assert said == [said[0]] and said[0].startswith("warning: the profiler did not start")


def test_a_failed_run_stops_the_profiler_without_writing(tmp_path):
    probe = Probe()
    profiler = StepProfiler(5, 0, tmp_path / "profile", CPU, probe, print, EVERY_STEP)
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
