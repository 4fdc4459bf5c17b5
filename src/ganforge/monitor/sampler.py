"""The background telemetry sampler: one daemon thread that reads the hardware every few seconds, summarised per
tick as the minimum, mean and maximum of each signal.

The thread only reads the hardware and appends to a list under a lock; the training thread takes the list at each
tick. So sampling never waits on training, and training waits on the sampler only for the moment of the swap.
"""

import threading

THREAD_NAME = "ganforge-monitor"
BITMASK_SUFFIX = "/throttle"  # reason bits: OR-ed over the tick, not averaged


class Sampler:
    """Calls `reader.read()` at `start()` and then every `interval` seconds on its thread until `stop()`.

    A reader error (one of `reader.errors`) ends sampling and is kept for `take_problem()`, so the caller warns once
    and training goes on without telemetry."""

    def __init__(self, reader, interval: float):
        assert interval > 0, interval
        self._reader, self._interval = reader, interval
        self._samples: list[dict[str, float]] = []
        self._problem: str | None = None
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)

    def start(self) -> None:
        """Take the first reading here (so the first tick has one whatever the thread's timing), then sample on."""
        if self._read():
            self._thread.start()

    def stop(self) -> None:
        """Ask the thread to finish and wait for it (at most one read in progress)."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join()

    def _run(self) -> None:
        while not self._stopping.wait(self._interval) and self._read():
            pass

    def _read(self) -> bool:
        """One reading; False (with the problem kept) when the reader failed."""
        try:
            sample = self._reader.read()
        except self._reader.errors as error:
            with self._lock:
                self._problem = f"telemetry stopped ({type(error).__name__}: {error}); training goes on without it"
            return False
        with self._lock:
            self._samples.append(sample)
        return True

    def drain(self) -> dict[str, float]:
        """Summary of the samples read since the last drain ({} when none)."""
        with self._lock:
            samples, self._samples = self._samples, []
        return summarise(samples)

    def take_problem(self) -> str | None:
        """Why sampling stopped, the first time it is asked; None otherwise."""
        with self._lock:
            problem, self._problem = self._problem, None
        return problem


def summarise(samples: list[dict[str, float]]) -> dict[str, float]:
    """{signal: mean, signal/min: ..., signal/max: ...} over the samples (a signal may be missing from some);
    throttle-reason bits are OR-ed."""
    values: dict[str, list[float]] = {}
    for sample in samples:
        for key, value in sample.items():
            values.setdefault(key, []).append(value)
    out = {}
    for key, seen in values.items():
        if key.endswith(BITMASK_SUFFIX):
            bits = 0
            for value in seen:
                bits |= int(value)
            out[key] = float(bits)
        else:
            out |= {key: sum(seen) / len(seen), f"{key}/min": min(seen), f"{key}/max": max(seen)}
    return out
