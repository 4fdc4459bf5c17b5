"""The decoding pool under a signal: whenever SIGTERM lands, the exception it raises ends `ordered_map` promptly.

The moment that hung `dataset build` about once in 300 group SIGTERMs (its pool.join() waiting forever) is made
certain here: the signal is sent from inside `apply_async`, after the task has entered the pool's cache and before it
is queued, with a thread that takes signals beside the main thread (tqdm's monitor is one), so that holding the
signals in the main thread cannot defer the exception."""

import subprocess
import sys

PROGRAM = """
import multiprocessing.pool, os, signal, threading, time
from ganforge.data.pool import ordered_map

class Stop(BaseException):
    pass

def stop(signum, frame):
    raise Stop

signal.signal(signal.SIGTERM, stop)
# a thread that takes signals, as tqdm's monitor does: a signal held by the main thread is taken here
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
register, calls = multiprocessing.pool.ApplyResult.__init__, []

def register_then_signal(self, *args, **kwargs):
    register(self, *args, **kwargs)  # in the pool's cache now; apply_async queues the task after this returns
    calls.append(1)
    if len(calls) == 3:
        os.kill(os.getpid(), signal.SIGTERM)

multiprocessing.pool.ApplyResult.__init__ = register_then_signal
try:
    for _ in ordered_map(len, [(b"x",)] * 100, 2):
        pass
except Stop:
    print("stopped after", len(calls), "tasks")
"""


def test_a_signal_between_a_tasks_registration_and_its_queueing_ends_the_map_without_hanging():
    done = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "stopped after 3 tasks\n", done.stdout + done.stderr
