"""Where a training step spends its time: named sections timed when telemetry is on, and `record_function` labels
when the profiler runs. Off (the default), every context is a no-op, so the normal path gains nothing.

On CUDA the sections are timed with CUDA events, resolved at the tick (which already waits for the device), so
timing adds no host-device synchronisation per step. On CPU, work is synchronous and the host clock is exact.
"""

import contextlib
import time

import torch

SECTIONS = ("fwd_bwd", "optimizer", "allreduce")


class Probe:
    """Timing of the `SECTIONS` (when `timing`) and profiler labels (while `profiling`)."""

    def __init__(self, device: torch.device | None = None, timing: bool = False):
        self.timing, self.profiling = timing, False
        self.labelled: set[str] = set()  # the labels entered while profiling (the profiler resets it at its start)
        self._cuda = device is not None and device.type == "cuda"
        self._seconds = dict.fromkeys(SECTIONS, 0.0)
        self._events: list[tuple[str, torch.cuda.Event, torch.cuda.Event]] = []

    def label(self, name: str):
        """A profiler range named `name` while profiling."""
        if not self.profiling:
            return contextlib.nullcontext()
        self.labelled.add(name)
        return torch.profiler.record_function(name)

    def section(self, name: str, label: str | None = None):
        """Time `name` (one of SECTIONS) when timing; also a profiler range `label` while profiling."""
        assert name in SECTIONS, name
        if not self.timing:
            return self.label(label) if label else contextlib.nullcontext()
        return self._timed(name, label)

    @contextlib.contextmanager
    def _timed(self, name: str, label: str | None):
        with self.label(label) if label else contextlib.nullcontext():
            if self._cuda:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                yield
                end.record()
                self._events.append((name, start, end))
            else:
                begin = time.perf_counter()
                yield
                self._seconds[name] += time.perf_counter() - begin

    def drain(self) -> dict[str, float]:
        """Seconds spent in each section since the last drain."""
        if self._events:
            self._events[-1][2].synchronize()
            for name, start, end in self._events:
                self._seconds[name] += start.elapsed_time(end) / 1000
            self._events.clear()
        seconds, self._seconds = self._seconds, dict.fromkeys(SECTIONS, 0.0)
        return seconds
