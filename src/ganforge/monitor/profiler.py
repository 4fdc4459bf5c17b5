"""`--profile STEPS`: torch.profiler over STEPS training steps, once per run, after a tick of warm-up.

It writes `RUN/profile/ganforge.pt.trace.json` (a Chrome trace: TensorBoard's profiler view and Perfetto open it)
and `RUN/profile/summary.txt`: the time per label as a share of the step, then the top operators by self time.
"""

import contextlib
from collections.abc import Callable
from pathlib import Path

import torch

from ganforge.durable import replace_file
from ganforge.monitor.probe import Probe

STEP_LABEL = "step"
LABELS = ("data", "G main", "G reg", "D main", "D reg", "all-reduce", "EMA")
OTHER = "other"
TOP_OPS = 20
TRACE_NAME = "ganforge.pt.trace.json"


class StepProfiler:
    """Profiles `steps` steps from the first one at or after `start_nimg` images; `out_dir` None: never."""

    def __init__(
        self,
        steps: int,
        start_nimg: int,
        out_dir: Path | None,
        device: torch.device,
        probe: Probe,
        say: Callable[[str], None],
    ):
        self.steps, self.start_nimg, self.out_dir = steps, start_nimg, out_dir
        self.device, self.probe, self.say = device, probe, say
        self._profile: torch.profiler.profile | None = None
        self._done, self._count = steps == 0 or out_dir is None, 0
        self._first_nimg: int | None = None

    @contextlib.contextmanager
    def step(self, cur_nimg: int):
        """One training step: profiled, and labelled as a step, while the window is open."""
        if not self._done and self._profile is None and cur_nimg >= self.start_nimg:
            self._begin(cur_nimg)
        if self._profile is None:
            yield
            return
        with torch.profiler.record_function(STEP_LABEL):
            yield
        self._count += 1
        if self._count == self.steps:
            self.finish()

    def _begin(self, cur_nimg: int) -> None:
        activities = [torch.profiler.ProfilerActivity.CPU]
        if self.device.type == "cuda":
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        self._profile = torch.profiler.profile(activities=activities, record_shapes=True, profile_memory=True)
        self._profile.__enter__()
        self._first_nimg, self.probe.profiling = cur_nimg, True

    def finish(self) -> Path | None:
        """Stop profiling and write the trace and summary (of the steps profiled so far); -> the profile folder."""
        started, profile = self._first_nimg is not None, self._stop()
        if not started and self.steps and self.out_dir is not None:
            self.say(
                "warning: the profiler did not start: the run ended within its first tick, which is the "
                "profiler's warm-up; profile a run that trains for more than one tick"
            )
        if profile is None or self._count == 0:
            return None
        self.out_dir.mkdir(parents=True, exist_ok=True)
        profile.export_chrome_trace(str(self.out_dir / TRACE_NAME))
        sort_by = "self_device_time_total" if self.device.type == "cuda" else "self_cpu_time_total"
        spans = [
            (e.name, e.time_range.start, e.time_range.end)
            for e in profile.events()
            if e.name in (STEP_LABEL, *LABELS) and e.device_type == torch.autograd.DeviceType.CPU
        ]
        top = profile.key_averages().table(sort_by=sort_by, row_limit=TOP_OPS)
        text = summary_text(self._count, self._first_nimg, *label_times(spans), top)
        replace_file(self.out_dir / "summary.txt", text.encode())
        self.say(
            f"profile of {self._count} steps in {self.out_dir}: summary.txt, and {TRACE_NAME} for TensorBoard's "
            "profiler view or https://ui.perfetto.dev"
        )
        return self.out_dir

    def abort(self) -> None:
        """Stop profiling without writing anything (the run failed)."""
        self._stop()

    def _stop(self) -> torch.profiler.profile | None:
        profile, self._profile, self._done = self._profile, None, True
        self.probe.profiling = False
        if profile is not None:
            profile.__exit__(None, None, None)
        return profile


def label_times(spans: list[tuple[str, float, float]]) -> tuple[float, dict[str, float]]:
    """(total step time, time per label and OTHER) from (name, start, end) ranges of steps and labels: each moment
    of a step belongs to the innermost label open then (the last opened), so an all-reduce inside a phase counts
    for the all-reduce only and the times add up to the steps' total."""
    steps = [(a, b) for name, a, b in spans if name == STEP_LABEL]
    labels = [(name, a, b) for name, a, b in spans if name in LABELS]
    times = dict.fromkeys((*LABELS, OTHER), 0.0)
    for step_start, step_end in steps:
        inside = [
            (name, max(a, step_start), min(b, step_end)) for name, a, b in labels if a < step_end and b > step_start
        ]
        cuts = sorted({step_start, step_end, *(a for _, a, _ in inside), *(b for _, _, b in inside)})
        for lo, hi in zip(cuts, cuts[1:], strict=False):
            open_ = [(a, a - b, name) for name, a, b in inside if a <= lo and b >= hi]  # latest start, then shortest
            times[max(open_)[2] if open_ else OTHER] += hi - lo
    return sum(b - a for a, b in steps), times


def summary_text(steps: int, first_nimg: int, total: float, times: dict[str, float], top_ops: str) -> str:
    """summary.txt: label shares (host wall-clock; on CUDA, kernels launched under one label may run under the
    next), then torch's operator table."""
    lines = [
        f"ganforge profile: {steps} steps from {first_nimg / 1000:g} kimg, {total / 1000 / max(steps, 1):.2f} "
        "ms per step (host wall-clock)",
        "",
        "time per label, share of the step:",
    ]
    for name, spent in times.items():
        lines.append(
            f"  {name:<12} {100 * spent / max(total, 1e-9):6.1f}%  {spent / 1000 / max(steps, 1):9.2f} ms/step"
        )
    lines.append(f"  {'total':<12} {100 * sum(times.values()) / max(total, 1e-9):6.1f}%")
    return "\n".join([*lines, "", f"top {TOP_OPS} operators by self time:", top_ops, ""])
