"""One trial of a sweep: an ordinary `ganforge train` run in its own folder, started as a child process, watched
through the metric file it appends to at every snapshot, and stopped (SIGTERM: it checkpoints first) when the
pruner says it falls behind.

A trial's folder holds one run folder; a trial that was interrupted continues in the same folder, so its train
command finds its checkpoint and resumes exactly (`ganforge train`'s own rule: rerunning the same command resumes).
"""

import shlex
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ganforge.dist import parent_death_signal
from ganforge.durable import append_text
from ganforge.sweep.measure import measurements
from ganforge.urls import public_text

POLL_S = 0.5  # how often a running trial's metric file is read
CONSOLE = "console.txt"  # the child's stdout and stderr, beside its run folder
# The exit statuses of a run stopped by a signal after its checkpoint (SIGTERM, Ctrl-C): it can resume.
STOPPED = (143, 130, -signal.SIGTERM, -signal.SIGINT, -signal.SIGKILL)


@dataclass(frozen=True)
class Plan:
    """How to run one trial: its folder, the `ganforge train` words and the environment of its process."""

    folder: Path
    words: list[str]
    env: dict

    def command(self) -> str:
        """The train command as a user would type it (URLs public)."""
        return public_text(shlex.join(["ganforge", *self.words]))


@dataclass(frozen=True)
class Outcome:
    """How a trial ended: state "complete", "pruned", "failed" or "stopped" (interrupted after a checkpoint, to be
    continued), its last value and a line saying why."""

    state: str
    value: float | None
    note: str


def run_folder(folder: Path) -> Path | None:
    """The run folder `ganforge train` made in a trial's folder (the newest, should there be several)."""
    runs = sorted(p for p in folder.glob("[0-9]*-*") if p.is_dir()) if folder.is_dir() else []
    return runs[-1] if runs else None


class Watch:
    """Reports a trial's measurements to Optuna once each, in order, and asks the pruner after each."""

    def __init__(self, trial, metric: str):
        self.trial, self.metric, self.reported, self.last = trial, metric, set(), None

    def falls_behind(self, folder: Path) -> bool:
        """Report what is new; True once the pruner says to stop. The measurement of the starting point is not
        reported: every trial starts from the same weights (the same seed), and Optuna's pruners compare each
        trial's best value so far, which would then be that one for all."""
        for nimg, value in measurements(run_folder(folder), self.metric):
            if nimg > 0 and nimg not in self.reported:
                self.reported.add(nimg)
                self.last = (nimg, value)
                self.trial.report(value, nimg)
                if self.trial.should_prune():
                    return True
        return False


def run_trial(trial, plan: Plan, metric: str, stopping, heartbeat) -> Outcome:
    """Run (or continue) the trial's training to its end, unless pruned or the sweep is stopping. `stopping` is a
    threading.Event; `heartbeat()` is called at every poll so that other machines see the trial alive."""
    watch = Watch(trial, metric)
    if watch.falls_behind(plan.folder):  # continued: what it measured before may already fall behind
        return _pruned(plan.folder, watch, metric)
    plan.folder.mkdir(parents=True, exist_ok=True)
    with open(plan.folder / CONSOLE, "ab") as console:
        child = subprocess.Popen(
            [sys.executable, "-m", "ganforge", *plan.words], stdout=console, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, env=plan.env, preexec_fn=_stop_with_sweep,
        )  # fmt: skip
        try:
            pruned = _follow(child, watch, plan.folder, stopping, heartbeat)
        finally:
            if child.poll() is None:  # the sweep is leaving: the trial checkpoints and stops with it
                child.send_signal(signal.SIGTERM)
            child.wait()
    if pruned:
        return _pruned(plan.folder, watch, metric)
    watch.falls_behind(plan.folder)  # the final measurement, written just before the run ended
    return _ended(child.returncode, watch, plan.folder)


def _stop_with_sweep() -> None:
    """In the child: SIGTERM when the sweep's thread that started it ends (the sweep was killed), so that the run
    checkpoints and stops instead of training on with nobody to report to."""
    parent_death_signal(signal.SIGTERM)


def _follow(child, watch: Watch, folder: Path, stopping, heartbeat) -> bool:
    """Wait for the child, reporting its measurements; True when it was stopped for falling behind."""
    signalled = False
    while child.poll() is None:
        heartbeat()
        if stopping.is_set() and not signalled:
            child.send_signal(signal.SIGTERM)
            signalled = True
        if not signalled and watch.falls_behind(folder):
            child.send_signal(signal.SIGTERM)
            child.wait()
            return True
        time.sleep(POLL_S)
    return False


def _pruned(folder: Path, watch: Watch, metric: str) -> Outcome:
    nimg, value = watch.last
    note = (
        f"pruned by the sweep at {nimg / 1000:g} kimg: {metric} {value:.4g} falls behind the other trials at that "
        "point; this run stops here"
    )
    if (run := run_folder(folder)) is not None:
        append_text(run / "log.txt", note + "\n")
    return Outcome("pruned", value, note)


def _ended(status: int, watch: Watch, folder: Path) -> Outcome:
    value = None if watch.last is None else watch.last[1]
    if status == 0 and value is not None:
        return Outcome("complete", value, f"finished: {value:.4g}")
    if status in STOPPED:
        return Outcome("stopped", value, f"stopped (exit status {status}) after its checkpoint; it continues there")
    return Outcome("failed", value, _failure(status, folder))


def _failure(status: int, folder: Path) -> str:
    """Why the trial failed: the last error line its training wrote, else its exit status."""
    lines = (folder / CONSOLE).read_text(encoding="utf-8", errors="replace").splitlines()
    errors = [line for line in lines if line.startswith("error: ")]
    detail = errors[-1] if errors else f"exit status {status}"
    return public_text(f"failed: {detail[:400]} (see {folder / CONSOLE})")
