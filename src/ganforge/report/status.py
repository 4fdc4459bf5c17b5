"""Is a run running, finished, preempted, diverged or failed? Read from the lines `ganforge train` writes to log.txt.

The last of these lines decides (a finished run that is continued with a longer --kimg runs again):
- "starting at ..." / "resuming at ...": running;
- "done: ..." / "already at ...; nothing to do": finished;
- "stopping on signal ...": preempted (SIGTERM, checkpointed; rerun the command to resume);
- "stopped by the user ...": stopped by Ctrl-C (SIGINT) in the training loop, checkpointed likewise;
- "pruned by the sweep ...": a `ganforge sweep` trial stopped for falling behind the others;
- "error: training diverged ...": diverged (too many non-finite steps in a row);
- "interrupted": stopped by Ctrl-C outside the training loop;
- any other "error: ..." line or a traceback: failed.
A run killed with SIGKILL, or whose machine died, writes none of them: it is "stalled" once nothing has been written
for much longer than its slowest tick (and at least STALE_AFTER_S, so a long metric computation is not mistaken).
"""

import time
from dataclasses import dataclass
from pathlib import Path

from ganforge.stat_names import TOTAL_S

STALE_AFTER_S = 30 * 60
STALE_TICKS = 5  # that many of the slowest tick's duration without a write


@dataclass(frozen=True)
class Status:
    state: str  # running, finished, preempted, diverged, stopped, pruned, failed, stalled
    detail: str  # the log line that decided it, or why the run is thought stalled


def _event(line: str) -> str | None:
    if line.startswith(("starting at ", "resuming at ")):
        return "running"
    if line.startswith("done: ") or (line.startswith("already at ") and "nothing to do" in line):
        return "finished"
    if line.startswith("stopping on signal"):
        return "preempted"
    if line.startswith("stopped by the user"):
        return "stopped"
    if line.startswith("pruned by the sweep"):
        return "pruned"
    if line.startswith("error: training diverged"):
        return "diverged"
    if line == "interrupted":
        return "stopped"
    if line.startswith(("error: ", "Traceback (most recent call last)")):
        return "failed"
    return None


def _slowest_tick_s(stats: list[dict]) -> float:
    """The longest time between two ticks of one session (Timing/total_s restarts at 0 on resume)."""
    totals = [r[TOTAL_S] for r in stats if TOTAL_S in r]
    return max([b - a for a, b in zip(totals, totals[1:], strict=False) if b > a] + totals[:1] + [0.0])


def _last_write(run: Path) -> float | None:
    times = [p.stat().st_mtime for p in (run / "log.txt", run / "stats.jsonl") if p.is_file()]
    return max(times) if times else None


def run_status(log: list[str], stats: list[dict], run: Path, now: float | None = None) -> Status:
    state, detail = "running", "no start line yet"
    for line in log:
        event = _event(line)
        if event is not None:
            state, detail = event, line
    if state != "running":
        return Status(state, detail)
    last = _last_write(run)
    silence = (time.time() if now is None else now) - (last or 0)
    if last is not None and silence > max(STALE_AFTER_S, STALE_TICKS * _slowest_tick_s(stats)):
        return Status("stalled", f"nothing written for {silence / 3600:.1f} h: killed, or its machine stopped")
    return Status(state, detail)
