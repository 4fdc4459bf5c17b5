import re
import signal
import threading
import time
from pathlib import Path

import pytest

from ganforge.data.readahead import ReadAhead
from ganforge.errors import UserError


def test_items_arrive_in_order_then_the_iteration_ends():
    ahead = ReadAhead(range(10), depth=3, timeout_s=10, stalled="stalled")
    assert list(ahead) == list(range(10))
    with pytest.raises(StopIteration):
        next(ahead)


def _fails_at_three():
    yield from range(3)
    raise UserError("bad sample 3")


def test_an_error_of_the_reader_is_raised_at_its_position():
    ahead = ReadAhead(_fails_at_three(), depth=2, timeout_s=10, stalled="stalled")
    assert [next(ahead) for _ in range(3)] == [0, 1, 2]
    with pytest.raises(UserError, match="bad sample 3"):
        next(ahead)


def _stuck():
    yield 0
    time.sleep(1.5)  # longer than the timeout; short so that the abandoned thread ends soon
    yield 1


def test_a_stalled_reader_is_a_user_error():
    ahead = ReadAhead(_stuck(), depth=2, timeout_s=0.5, stalled="no batch read from x.gfd")
    assert next(ahead) == 0
    with pytest.raises(UserError, match="no batch read from x.gfd"):
        next(ahead)


def _counting(read: list):
    while True:
        read.append(len(read))
        yield read[-1]


def test_reads_at_most_depth_ahead_and_dropping_it_ends_the_thread():
    read = []
    ahead = ReadAhead(_counting(read), depth=2, timeout_s=10, stalled="stalled")
    assert next(ahead) == 0
    time.sleep(0.2)
    # one item taken, `depth` waiting in the queue, one read and waiting for room
    assert len(read) == 1 + 2 + 1
    thread = ahead._thread
    del ahead
    thread.join(timeout=5)
    assert not thread.is_alive() and thread not in threading.enumerate()


def test_the_reading_thread_never_takes_sigterm_or_sigint():
    """Blocked there, they go to the main thread, where they wake a wait for the next item at once."""
    ahead = ReadAhead(_counting([]), depth=2, timeout_s=10, stalled="stalled")
    status = Path(f"/proc/self/task/{ahead._thread.native_id}/status").read_text()
    mask = int(re.search(r"^SigBlk:\s*([0-9a-f]+)$", status, re.M).group(1), 16)
    assert all(mask >> (signum - 1) & 1 for signum in (signal.SIGTERM, signal.SIGINT)), hex(mask)
    ahead.close()
