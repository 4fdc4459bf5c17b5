"""A tracker driven from a background thread, so that training never waits for it.

Training puts events (a method name and its arguments) on a bounded queue and goes on; one daemon thread calls the
tracker with them, in order. A call that raises (the server is down, slow, or refuses) is retried after 1, 2, 4, ...
up to 60 s, for as long as the run lasts; the first failure is reported once, through `warn`, and so is the
recovery. When the queue is full, the newest events are dropped and counted rather than blocking a training step:
everything sent is also in the run folder (stats.jsonl, metric files, the images), and `ganforge report --to` can
upload the run again after the fact. At the end, `close` waits a bounded time for what is queued while the tracker
takes it, and not at all once it is failing.
"""

import contextlib
import queue
import threading
import time
from collections.abc import Callable

from ganforge.track.base import Tracker

QUEUE_EVENTS = 10_000  # ~10 days of ticks at one a minute; a dropped event is counted and said
RETRY_DELAYS_S = (1, 2, 4, 8, 16, 32, 60)  # then every 60 s
_STOP = object()


class BackgroundTracker:
    """`tracker` fed from a thread; `warn(text)` says what went wrong (from that thread, at most once per failure
    episode)."""

    def __init__(
        self, tracker: Tracker, warn: Callable[[str], None], delays=RETRY_DELAYS_S, capacity: int = QUEUE_EVENTS
    ):
        self.tracker, self.name, self._warn, self._delays = tracker, tracker.name, warn, delays
        self._queue: queue.Queue = queue.Queue(maxsize=capacity)
        self._dropped = 0
        self._closing, self._failing = threading.Event(), threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"ganforge-{self.name}", daemon=True)
        self._thread.start()

    def send(self, method: str, *args) -> None:
        """Queue a call of the tracker's `method`; never blocks (a full queue drops the event and counts it)."""
        try:
            self._queue.put_nowait((method, args))
        except queue.Full:
            if self._dropped == 0:
                self._warn(f"{self.name} is not keeping up: events are dropped (the run folder keeps them all)")
            self._dropped += 1

    def close(self, status: str, timeout_s: float) -> bool:
        """Queue `finish(status)` and wait up to `timeout_s` for everything queued to be sent; False (with a
        warning) when the tracker did not take it all in time."""
        deadline = time.monotonic() + timeout_s
        self.send("finish", status)
        with contextlib.suppress(queue.Full):  # the thread is stuck in a call: the wait below times out
            self._queue.put(_STOP, timeout=timeout_s)
        # While the tracker takes events, wait for the rest; once it is failing, waiting would only delay the end of
        # the command (the run folder holds everything, and `report --to` sends it later).
        while self._thread.is_alive() and time.monotonic() < deadline and not self._failing.is_set():
            self._thread.join(0.05)
        self._closing.set()  # a retry still waiting gives up; a call still blocked dies with the process
        if self._thread.is_alive() or self._dropped:
            left = self._queue.qsize() + self._dropped
            self._warn(f"{self.name}: {left} event(s) not sent; `ganforge report --to {self.name} RUN` uploads the run")
            return False
        return True

    def _run(self) -> None:
        while True:
            event = self._queue.get()
            if event is _STOP:
                return
            method, args = event
            if not self._call(method, args):
                return

    def _call(self, method: str, args: tuple) -> bool:
        """Call until it succeeds; False when closing cut the retries short."""
        failures = 0
        while True:
            try:
                getattr(self.tracker, method)(*args)
            except Exception as error:  # any failure of a third-party client: retried, never raised into training
                self._failing.set()
                if failures == 0:
                    self._warn(f"{self.name}: {method} failed ({type(error).__name__}: {str(error)[:200]}); retrying")
                delay = self._delays[min(failures, len(self._delays) - 1)]
                failures += 1
                if self._closing.wait(delay):
                    return False
                continue
            if failures:
                self._failing.clear()
                self._warn(f"{self.name}: reachable again after {failures} failed attempt(s)")
            return True
