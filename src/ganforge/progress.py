"""Progress of long work: bars on a terminal, plain lines everywhere else.

A bar redraws itself with carriage returns; written to a log file or a pipe (a batch job's stderr) those updates
pile up into one long line interleaved with warnings. So bars are drawn only when stderr is a terminal. Off one, a
`Stage` (a step of a command that may run for minutes) writes lines to stdout instead, beside the command's other
lines (as a training run's status lines): one when it starts, one when it ends with its duration, and while a long one
runs one after 1, 2, 4, 8, ... minutes, so that a log shows the work is alive without growing by more than a few
lines an hour. stderr keeps only errors and warnings.
"""

import contextlib
import sys
import threading
import time

from tqdm import tqdm

FIRST_REPORT_S = 60.0  # off a terminal, the first "still running" line; each next one after twice the time
ESTIMATE_AFTER_S = 10.0  # a counted stage measures this long, then says how long it all takes when that is long
LONG_S = 60.0  # the length of work that is worth an estimate
REDRAW_S = 1.0  # on a terminal, a bar redraws at least this often, so that its clock runs during one long call


def progress_bar(iterable=None, *, enabled: bool = True, **options) -> tqdm:
    """tqdm on stderr, drawn only when `enabled` and stderr is a terminal (a disabled bar still iterates)."""
    return tqdm(iterable, file=sys.stderr, disable=not (enabled and sys.stderr.isatty()), **options)


def duration(seconds: float) -> str:
    """4.2 s, 3 min 07 s, 2 h 05 min"""
    if round(seconds, 1) < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    return f"{minutes // 60} h {minutes % 60:02d} min"


class Stage:
    """One stage of long work, shown while it runs; a context manager (or call `close`).

    On a terminal (stderr) a tqdm bar there: counting `total` `unit`s as `update` reports them, or, with `total` None
    (one long call), showing the time it has run. Off a terminal, lines on stdout: `WHAT: started`, `WHAT: 340/768 img
    after 1 min 00 s` (or `running for ...`) at 1, 2, 4, ... minutes, and `WHAT: done in 4.2 s (PARTS)`, where PARTS
    are the seconds spent in each `part`. `bar=False` is for a stage made of stages with bars of their own: no bar
    and no intermediate lines, only its start and end lines off a terminal. Nothing at all when not `enabled` (ranks
    other than the first, callers that report otherwise).

    A counted stage that turns out long says so once, ESTIMATE_AFTER_S into it: `WHAT: about 52 min 10 s in all at
    0.32 step/s here` (a line on a terminal too), then `faster`, the caller's advice on a quicker setting, if any.
    """

    def __init__(self, what: str, total: int | None = None, unit: str = "img", enabled: bool = True, bar: bool = True,
                 faster: str = ""):  # fmt: skip
        self.what, self.total, self.unit, self.done, self.faster = what, total, unit, 0, faster
        self._estimated = not (enabled and total)
        self._bar_stream, self._line_stream = sys.stderr, sys.stdout  # as they are now (a test or runner swaps them)
        self._started = time.monotonic()
        self._parts: dict[str, float] = {}
        self._stop, self._closed = threading.Event(), False
        on_terminal = enabled and self._bar_stream.isatty()
        self._lines = enabled and not on_terminal
        self._bar = self._make_bar() if on_terminal and bar else None
        if self._lines:
            self._write(f"{what}: started")
        self._ticker = None
        if enabled and bar:
            self._ticker = threading.Thread(target=self._tick, name=f"progress: {what}", daemon=True)
            self._ticker.start()

    def _make_bar(self) -> tqdm:
        counted = self.total is not None
        shape = {"dynamic_ncols": True} | ({} if counted else {"bar_format": "{desc}: running for {elapsed}"})
        return tqdm(total=self.total, desc=self.what, unit=self.unit, file=self._bar_stream, **shape)

    def update(self, count: int = 1) -> None:
        """`count` more units of the work are done."""
        self.done += count
        if self._bar is not None:
            self._bar.update(count)
        if not self._estimated and self.elapsed() >= ESTIMATE_AFTER_S:
            self._estimate()

    def _estimate(self) -> None:
        self._estimated = True
        rate = self.done / self.elapsed()
        total_s = self.total / max(rate, 1e-9)
        if total_s >= LONG_S:
            line = f"{self.what}: about {duration(total_s)} in all at {rate:.2g} {self.unit}/s here"
            self._say(line + (f"; {self.faster}" if self.faster else ""))

    @contextlib.contextmanager
    def part(self, name: str | None):
        """Time what runs inside as part `name` of this stage (None: not timed), for the closing line."""
        began = time.monotonic()
        try:
            yield
        finally:
            if name is not None:
                self._parts[name] = self._parts.get(name, 0.0) + time.monotonic() - began

    def elapsed(self) -> float:
        return time.monotonic() - self._started

    def close(self, failed: bool = False) -> None:
        """End the stage: the bar closes (it stays on the terminal), or the closing line is written."""
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        if self._bar is not None:
            self._bar.close()
        if self._lines and failed:
            self._write(f"{self.what}: stopped after {duration(self.elapsed())}")
        elif self._lines:
            parts = ", ".join(f"{name} {duration(seconds)}" for name, seconds in self._parts.items())
            self._write(f"{self.what}: done in {duration(self.elapsed())}" + (f" ({parts})" if parts else ""))

    def __enter__(self) -> "Stage":
        return self

    def __exit__(self, kind, error, trace) -> None:
        self.close(failed=kind is not None)

    def _tick(self) -> None:
        """The ticker thread: redraws the bar every REDRAW_S, or writes a line at FIRST_REPORT_S, twice that, ..."""
        if self._bar is not None:
            while not self._stop.wait(REDRAW_S):
                self._bar.refresh()
            return
        report_at = FIRST_REPORT_S
        while not self._stop.wait(max(report_at - self.elapsed(), 0.0)):
            so_far = duration(self.elapsed())
            counted = f"{self.done}/{self.total} {self.unit} after {so_far}"
            self._write(f"{self.what}: " + (counted if self.total is not None else f"running for {so_far}"))
            report_at *= 2

    def _write(self, line: str) -> None:
        print(line, file=self._line_stream, flush=True)

    def _say(self, line: str) -> None:
        """A line the user must see wherever the progress shows: above the bar, or among the lines."""
        if self._bar is not None:
            self._bar.write(line, file=self._bar_stream)
        else:
            self._write(line)
