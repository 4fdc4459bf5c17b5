"""Decoding images on every core: a process (or thread) pool that keeps results in input order and bounds what is
queued."""

import collections
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

from ganforge import preempt

_IN_FLIGHT_PER_WORKER = 4  # enough queued work to keep each worker busy, little enough to bound memory
# Source files waiting for a worker are held in memory (and pickled to it); past this many bytes, the oldest is
# waited for first, so a few huge files never pile up.
_IN_FLIGHT_BYTES = 256 * 2**20


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def ordered_map(function, items, workers: int, threads: bool = False):
    """map() over a process pool (`threads`: a thread pool, for work that releases the GIL, started safely from a
    process that already runs threads) that yields results in input order and keeps at most a few items per worker
    (and _IN_FLIGHT_BYTES of source bytes, the length of each item's first element) queued.

    Pool.imap would consume the whole input eagerly and buffer every result a slow consumer has not taken yet.
    """
    if workers == 0:
        yield from map(function, items)
        return
    if threads:
        executor = ThreadPoolExecutor(workers, thread_name_prefix="ganforge-decode")
        yield from _bounded(executor, function, items, workers)
        return
    # fork starts workers instantly and shares the parent's imports; spawn where fork does not exist. The workers
    # leave SIGTERM and SIGINT to this process: a Ctrl-C or SIGTERM meant for the whole group would kill one, maybe
    # holding a queue's lock, on which the pool's shutdown would then wait forever.
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    executor = ProcessPoolExecutor(workers, context, initializer=preempt.leave_signals_to_parent)
    yield from _bounded(executor, function, items, workers)


def _bounded(executor, function, items, workers: int):
    """ordered_map's work on `executor`, which it shuts down when done or left."""
    try:
        pending, sizes = collections.deque(), collections.deque()
        for item in items:
            with preempt.signals_held():  # submit starts the workers and the executor's thread: signals stay here
                pending.append(executor.submit(function, item))
            sizes.append(len(item[0]))
            while len(pending) >= _IN_FLIGHT_PER_WORKER * workers or sum(sizes) > _IN_FLIGHT_BYTES:
                sizes.popleft()
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()
    finally:
        # Left early (an error, a signal's exception, the consumer stopping), the work not started is not wanted. A
        # signal's exception can land anywhere in this thread, even inside submit() between registering a task and
        # queueing it (another thread, such as tqdm's monitor, takes a signal held here); multiprocessing.Pool's
        # join() then waited forever for that task's result, where this cancels it. The workers are stopped by
        # their end-of-work message, never by a signal that could merge with the group's and be lost.
        executor.shutdown(wait=True, cancel_futures=True)
