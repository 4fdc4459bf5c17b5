"""`--profile STEPS`: torch.profiler over STEPS training steps, once per run, after a tick of warm-up.

The lazy regularisers run only every few steps (R1 every 16 by default), so a window of STEPS steps may miss one:
the window is extended, by at most the longest phase interval (capped at MAX_WINDOW_STEPS), until every phase of
the run has been profiled; a phase that still did not run is named as such in the summary instead of showing 0%.

It writes, in RUN/profile/: `ganforge.pt.trace.json.gz` (a gzipped Chrome trace: TensorBoard's profiler view and
Perfetto open it), `summary.txt` (the time per label as a share of the window, calls and ms per call, then the top
operators by self time) and, when torch printed any, `torch-messages.txt`: torch's own notes and warnings from
starting and stopping the profiler, routed there instead of the terminal. The trace records operator names and
times; input shapes, memory events and Python stacks (`detail`) make it several times larger and are off by
default.
"""

import contextlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from ganforge.durable import replace_file, replacing
from ganforge.monitor.probe import Probe
from ganforge.monitor.routed import routed_stderr

STEP_LABEL = "step"
PHASE_LABELS = ("G main", "G reg", "D main", "D reg")
LABELS = ("data", *PHASE_LABELS, "all-reduce", "EMA")
OTHER = "other"
TOP_OPS = 20
TRACE_NAME = "ganforge.pt.trace.json.gz"
SUMMARY_NAME = "summary.txt"
MESSAGES_NAME = "torch-messages.txt"
MAX_WINDOW_STEPS = 64  # the most steps the window is extended to for a phase that has not run yet


class StepProfiler:
    """Profiles `steps` steps from the first one at or after `start_nimg` images, and on until every phase of
    `phases` (profiler label -> interval in steps) has run, within `window_limit`; `out_dir` None: never. `detail`
    also records input shapes, memory and Python stacks."""

    def __init__(
        self,
        steps: int,
        start_nimg: int,
        out_dir: Path | None,
        device: torch.device,
        probe: Probe,
        say: Callable[[str], None],
        phases: dict[str, int],
        detail: bool = False,
    ):
        self.steps, self.start_nimg, self.out_dir = steps, start_nimg, out_dir
        self.device, self.probe, self.say, self.phases, self.detail = device, probe, say, phases, detail
        self.limit = window_limit(steps, phases)
        self._profile: torch.profiler.profile | None = None
        self._done, self._count = steps == 0 or out_dir is None, 0
        self._first_nimg: int | None = None
        self._messages: list[str] = []

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
        if self._count >= self.steps and (not self.missing() or self._count >= self.limit):
            self.finish()

    def missing(self) -> list[str]:
        """The phases of the run not profiled so far."""
        return [label for label in self.phases if label not in self.probe.labelled]

    def _begin(self, cur_nimg: int) -> None:
        activities = [torch.profiler.ProfilerActivity.CPU]
        if self.device.type == "cuda":
            activities.append(torch.profiler.ProfilerActivity.CUDA)
        d = self.detail
        self._profile = torch.profiler.profile(activities=activities, record_shapes=d, profile_memory=d, with_stack=d)
        # With memory profiling, freeing a block allocated before the start draws the allocator's one-time warning:
        # free one here, while stderr is routed, rather than in a training step.
        before_start = torch.empty(1) if d else None
        with routed_stderr(self._messages):
            self._profile.__enter__()
            del before_start
        self._first_nimg = cur_nimg
        self.probe.profiling, self.probe.labelled = True, set()

    def finish(self) -> Path | None:
        """Stop profiling and write the trace and summary (of the steps profiled so far); -> the profile folder."""
        started = self._first_nimg is not None
        if not started and self.steps and self.out_dir is not None:
            self.say(
                "warning: the profiler did not start: the run ended within its first tick, which is the "
                "profiler's warm-up; profile a run that trains for more than one tick"
            )
        with routed_stderr(self._messages):
            profile = self._stop()
            if profile is None or self._count == 0:
                return None
            self.out_dir.mkdir(parents=True, exist_ok=True)
            write_trace(profile, self.out_dir / TRACE_NAME)
            summary = self._summary(profile)
        replace_file(self.out_dir / SUMMARY_NAME, summary.encode())
        messages = "".join(self._messages).strip()
        if messages:
            replace_file(self.out_dir / MESSAGES_NAME, (messages + "\n").encode())
        self.say(self._announcement())
        return self.out_dir

    def _summary(self, profile: torch.profiler.profile) -> str:
        sort_by = "self_device_time_total" if self.device.type == "cuda" else "self_cpu_time_total"
        spans = [
            (e.name, e.time_range.start, e.time_range.end)
            for e in profile.events()
            if e.name in (STEP_LABEL, *LABELS) and e.device_type == torch.autograd.DeviceType.CPU
        ]
        top = profile.key_averages().table(sort_by=sort_by, row_limit=TOP_OPS)
        return summary_text(self._window(), *label_times(spans), label_calls(spans), top)

    def _window(self) -> "Window":
        missing = tuple(self.missing())
        return Window(self.steps, self._count, self.limit, self._first_nimg, self.phases, missing, self.detail)

    def _announcement(self) -> str:
        extension = self._window().extension()
        return (
            f"profile of {self._count} steps{f' ({extension})' if extension else ''} in {self.out_dir}: "
            f"{SUMMARY_NAME}, and {TRACE_NAME} for TensorBoard's profiler view or https://ui.perfetto.dev"
        )

    def abort(self) -> None:
        """Stop profiling without writing anything (the run failed)."""
        with routed_stderr(self._messages):
            self._stop()

    def _stop(self) -> torch.profiler.profile | None:
        profile, self._profile, self._done = self._profile, None, True
        self.probe.profiling = False
        if profile is not None:
            profile.__exit__(None, None, None)
        return profile


def window_limit(steps: int, phases: dict[str, int]) -> int:
    """The most steps the window may take: `steps`, or the longest interval (capped) when that is longer, since
    any run of that many consecutive steps holds a step of every phase."""
    return max(steps, min(max(phases.values(), default=1), MAX_WINDOW_STEPS))


def write_trace(profile: torch.profiler.profile, path: Path) -> None:
    """The Chrome trace, gzipped by torch (its JSON repeats the same keys on every event), written atomically."""
    with replacing(path) as tmp:  # the temporary name keeps the .gz suffix, by which torch compresses
        profile.export_chrome_trace(str(tmp))


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


def label_calls(spans: list[tuple[str, float, float]]) -> Counter:
    """How many ranges of each label lie (at least partly) inside a step."""
    steps = [(a, b) for name, a, b in spans if name == STEP_LABEL]
    return Counter(
        name for name, a, b in spans if name in LABELS and any(a < end and b > start for start, end in steps)
    )


@dataclass(frozen=True)
class Window:
    """What was profiled: `steps` asked, `count` profiled (the window may take up to `limit`) from `first_nimg`, the
    run's phases (label -> interval) and those `missing` from the window, and whether shapes, memory and stacks
    were recorded."""

    steps: int
    count: int
    limit: int
    first_nimg: int
    phases: dict[str, int]
    missing: tuple[str, ...]
    detail: bool

    @property
    def ended_by_the_run(self) -> bool:
        """The run ended before the window closed by itself."""
        return self.count < self.limit and (self.count < self.steps or bool(self.missing))

    def extension(self) -> str:
        """How the window differs from the steps asked ("" when it does not)."""
        if self.count > self.steps and not self.missing:
            return f"{self.steps} asked, extended until every phase ran"
        if self.missing:
            why = "the run ended first" if self.ended_by_the_run else f"the window's bound is {self.limit} steps"
            return f"{self.steps} asked; {', '.join(self.missing)} did not run: {why}"
        return ""

    def header(self, total: float) -> list[str]:
        extension = f" ({self.extension()})" if self.extension() else ""
        recorded = (
            "with input shapes, memory and Python stacks"
            if self.detail
            else ("operator names and times (input shapes, memory and Python stacks not recorded)")
        )
        return [
            f"ganforge profile: {self.count} steps{extension} from {self.first_nimg / 1000:g} kimg, "
            f"{total / 1000 / max(self.count, 1):.2f} ms per step (host wall-clock)",
            f"trace: {TRACE_NAME}, {recorded}",
        ]

    def not_run(self, label: str) -> str:
        """The summary's row for a phase of the run that did not run in the window."""
        interval = self.phases[label]
        if self.ended_by_the_run:
            why = "; the run ended first"
        else:  # the window reached its bound before the phase's turn
            why = f"; --profile {interval} covers it" if interval > self.count else ""
        return f"  {label:<12} not run in these {self.count} steps: it runs every {interval} steps{why}"

    def shown(self, label: str) -> bool:
        """Phases the run does not have (a regulariser with weight 0) are left out; the other labels always show."""
        return label not in PHASE_LABELS or label in self.phases


def summary_text(window: Window, total: float, times: dict[str, float], calls: Counter, top_ops: str) -> str:
    """summary.txt: label shares (host wall-clock; on CUDA, kernels launched under one label may run under the
    next), then torch's operator table."""
    lines = [*window.header(total), "", "time per label, share of the window:"]
    lines.append(f"  {'label':<12} {'share':>6}  {'ms/step':>9}  {'calls':>5}  {'ms/call':>9}")
    steps = max(window.count, 1)
    for name, spent in times.items():
        if not window.shown(name):
            continue
        if name in window.missing:
            lines.append(window.not_run(name))
            continue
        per_call = f"{spent / 1000 / calls[name]:9.2f}" if calls[name] else f"{'':>9}"
        count = f"{calls[name]:>5}" if name != OTHER else f"{'':>5}"
        lines.append(
            f"  {name:<12} {100 * spent / max(total, 1e-9):5.1f}%  {spent / 1000 / steps:9.2f}  {count}  {per_call}"
        )
    lines.append(f"  {'total':<12} {100 * sum(times.values()) / max(total, 1e-9):5.1f}%")
    return "\n".join([*lines, "", f"top {TOP_OPS} operators by self time:", top_ops, ""])
