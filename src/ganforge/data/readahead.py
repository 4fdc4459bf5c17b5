"""Reading ahead in a thread of this process, for data that needs no decoding (the fast format's memory map).

Copying a batch out of the memory map takes well under a millisecond per image and numpy releases the GIL while it
copies, so one thread keeps the next batches ready while the training step runs, without the inter-process transfer
that makes DataLoader workers the slower path for such data.
"""

import queue
import threading

from ganforge import preempt
from ganforge.errors import UserError


class _Finished:
    """Marks the end of a finite iterable in the queue."""


class _Raised:
    """An exception from the reading thread, raised again in the consumer's thread at the item it replaced."""

    def __init__(self, error: Exception):
        self.error = error


def _fill(items, slots: queue.Queue, stop: threading.Event) -> None:
    """Put every item of `items` into `slots` in order (blocking while it is full) until `stop` is set.

    Takes no reference to the ReadAhead that started it, so dropping that object closes it and ends this thread.
    """
    try:
        for item in items:
            slots.put(item)
            if stop.is_set():
                return
        slots.put(_Finished())
    except Exception as error:  # not swallowed: the consumer raises it at the next item it asks for
        slots.put(_Raised(error))


class ReadAhead:
    """Iterates `items` in their order, with up to `depth` items read ahead by one background thread.

    The consumer raises what the thread raised, at the position where it happened. If no item arrives for
    `timeout_s` seconds, it raises UserError(`stalled`): the storage under the reader is hung, not slow.
    """

    def __init__(self, items, depth: int, timeout_s: float, stalled: str):
        assert depth >= 1 and timeout_s > 0
        self._slots: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._timeout_s, self._stalled = timeout_s, stalled
        self._done = False
        args = (iter(items), self._slots, self._stop)
        self._thread = threading.Thread(target=_fill, args=args, name="ganforge-read-ahead", daemon=True)
        # Started with SIGTERM and SIGINT blocked, the thread is never the one the kernel hands them to. Python runs
        # handlers on the main thread, but only once that thread is interrupted: a signal taken by this thread would
        # leave the main thread asleep in a wait for a stalled read, and a second Ctrl-C would not interrupt it.
        with preempt.signals_held():
            self._thread.start()

    def __iter__(self):
        return self

    def __next__(self):
        if self._done:
            raise StopIteration
        try:
            item = self._slots.get(timeout=self._timeout_s)
        except queue.Empty:
            raise UserError(self._stalled) from None
        if isinstance(item, _Finished | _Raised):
            self._done = True
            if isinstance(item, _Raised):
                raise item.error
            raise StopIteration
        return item

    def close(self) -> None:
        """Stop the thread: it sees the flag after its next put, which emptying the queue lets through."""
        self._stop.set()
        self._done = True
        while True:
            try:
                self._slots.get_nowait()
            except queue.Empty:
                return

    def __del__(self):
        self.close()
