"""What a training run tells its sinks, and the fan-out that tells every sink in turn.

A sink keeps the events it is for (log.txt and the terminal, stats.jsonl, TensorBoard, the experiment trackers) and
ignores the others: each derives from `Quiet` and writes only its own. The fan-out calls the sinks in the order they
were given, every event, on the thread that emits it; a sink that must not hold training up (a tracker talking to
a server) hands the event to its own thread.

Steps are images (`nimg`), as everywhere in a run.
"""

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np


class Sink(Protocol):
    def line(self, text: str, terminal: bool) -> None:
        """A line for the user: for log.txt, and for the terminal too when `terminal` (else detail the terminal
        already showed). A sink that writes it makes any URL in it public (urls.public_text)."""

    def tick(self, record: dict[str, float], alerts: list[str], nimg: int) -> None:
        """One tick's record (`tick`, `kimg`, timing, memory, the training statistics) and the alerts that start
        at it."""

    def metric(self, record: dict, nimg: int) -> None:
        """One metric result, metrics.registry's record (`metric`, `results`, `seconds`, image counts, protocol)."""

    def images(self, tag: str, grid: np.ndarray, path: Path, nimg: int) -> None:
        """A sample grid (`reals`, `fakes`; uint8, height x width x channels) already saved at `path`."""

    def saved(self, kind: str, path: Path) -> None:
        """A snapshot file (`kind` "snapshot") or a checkpoint folder ("checkpoint") was written at `path`."""

    def close(self, outcome: str) -> None:
        """The run ends: `outcome` is "finished", "stopped" (preempted or interrupted; resumable) or "failed"."""


class Quiet:
    """A sink that keeps nothing: sinks derive from it and write only the events they are for."""

    def line(self, text: str, terminal: bool) -> None:
        pass

    def tick(self, record: dict[str, float], alerts: list[str], nimg: int) -> None:
        pass

    def metric(self, record: dict, nimg: int) -> None:
        pass

    def images(self, tag: str, grid: np.ndarray, path: Path, nimg: int) -> None:
        pass

    def saved(self, kind: str, path: Path) -> None:
        pass

    def close(self, outcome: str) -> None:
        pass


class FanOut:
    """Every event to every sink, in the sinks' order; no sinks: a run's silent stand-in (ranks other than 0)."""

    def __init__(self, sinks: Sequence[Sink]):
        self.sinks = tuple(sinks)

    def line(self, text: str, terminal: bool) -> None:
        for sink in self.sinks:
            sink.line(text, terminal)

    def tick(self, record: dict[str, float], alerts: list[str], nimg: int) -> None:
        for sink in self.sinks:
            sink.tick(record, alerts, nimg)

    def metric(self, record: dict, nimg: int) -> None:
        for sink in self.sinks:
            sink.metric(record, nimg)

    def images(self, tag: str, grid: np.ndarray, path: Path, nimg: int) -> None:
        for sink in self.sinks:
            sink.images(tag, grid, path, nimg)

    def saved(self, kind: str, path: Path) -> None:
        for sink in self.sinks:
            sink.saved(kind, path)

    def close(self, outcome: str) -> None:
        """Close the sinks in their order, each one even when one before it raised (its error is raised after)."""
        with contextlib.ExitStack() as closing:
            for sink in reversed(self.sinks):  # an exit stack runs its callbacks last in, first out
                closing.callback(sink.close, outcome)
