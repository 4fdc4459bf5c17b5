"""The decoding pool under a signal: wherever the exception of a SIGTERM lands, `ordered_map` ends promptly.

A signal's exception can land anywhere in the main thread, even while it holds SIGTERM (another thread, such as
tqdm's monitor, takes the signal and the main thread raises at its next check). One such place hung `dataset build`
about once in 300 group SIGTERMs: multiprocessing.Pool's join() waited forever for a task registered but never
queued. That place is made certain here: the exception is raised inside `submit`, after the task is registered and
before it is queued."""

import subprocess
import sys

PROGRAM = """
import concurrent.futures.process
from ganforge.data.pool import ordered_map

class Stop(BaseException):  # what the SIGTERM handler raises
    pass

registered = []

class Registry(dict):
    def __setitem__(self, key, value):
        super().__setitem__(key, value)  # registered; submit() queues the task after this returns
        registered.append(key)
        if len(registered) == 3:
            raise Stop

start = concurrent.futures.process.ProcessPoolExecutor.__init__

def start_with_registry(self, *args, **kwargs):
    start(self, *args, **kwargs)
    self._pending_work_items = Registry()

concurrent.futures.process.ProcessPoolExecutor.__init__ = start_with_registry
try:
    for _ in ordered_map(len, [(b"x",)] * 100, 2):
        pass
except Stop:
    print("stopped after", len(registered), "tasks")
"""


def test_an_exception_between_a_tasks_registration_and_its_queueing_ends_the_map_without_hanging():
    done = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout == "stopped after 3 tasks\n", done.stdout + done.stderr
