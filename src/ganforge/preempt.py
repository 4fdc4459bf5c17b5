"""Preemption: turn SIGTERM/SIGINT into a flag the training loop polls, so it can checkpoint and exit cleanly.

Clusters send SIGTERM some seconds before killing a job, torchrun forwards it to every worker, and Ctrl-C sends
SIGINT. Acting on the signal inside the handler would interrupt whatever was running (a half-applied optimizer
step, a checkpoint being written); setting a flag lets the loop finish the step, save once and exit with the
conventional status 128 + signal number (143 for SIGTERM, 130 for SIGINT).

The signal often reaches more than this process: `kill -TERM -- -PGID`, SLURM (every process of a job step),
systemd's control-group kill and a container's init signal every process, the DataLoader workers included. A worker
that died of it would make DataLoader raise "worker ... is killed by signal" in the middle of whatever this process
was doing, and the checkpoint would be lost. So the processes this one starts leave both signals to it
(`leave_signals_to_parent`), and it starts them with both signals held (`signals_held`): a child forked then begins
life with them blocked, before any code of its own has run, so no signal can reach it before it is set up.
"""

import contextlib
import multiprocessing
import os
import signal
import threading
import time

import torch

from ganforge import dist

_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class PreemptionGuard:
    """Context manager: while active, SIGTERM and SIGINT set `.requested` instead of ending the process.

        with PreemptionGuard() as guard:
            while training:
                ...one step...
                if guard.any_rank_requested(device):
                    save checkpoint; sys.exit(guard.exit_code)

    A second SIGINT raises KeyboardInterrupt, so a person pressing Ctrl-C twice is never stuck waiting for a
    save; only one that comes `repeat_after_s` or more after the first counts as a second. One sooner is the same
    interrupt arriving twice: sent to every process of a job (SLURM, a control group) it reaches a torchrun worker
    directly, and again when torchrun forwards the SIGINT it got itself. On exit the handlers that were installed
    before are put back. Use from the main thread only (Python delivers signals there).
    """

    def __init__(self, repeat_after_s: float = 1.0):
        self.requested = False
        self.signal_number: int | None = None
        self._previous: dict[int, object] = {}
        self._repeat_after_s = repeat_after_s
        self._first_sigint: float | None = None  # when this process itself got its first SIGINT

    @property
    def exit_code(self) -> int | None:
        """128 + the signal number once a signal arrived (143 SIGTERM, 130 SIGINT); None before."""
        return None if self.signal_number is None else 128 + self.signal_number

    def __enter__(self) -> "PreemptionGuard":
        for signum in _SIGNALS:
            self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc_info) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous.clear()

    def _handle(self, signum: int, frame) -> None:
        if signum == signal.SIGINT:
            now = time.monotonic()
            if self._first_sigint is None:
                self._first_sigint = now
            elif now - self._first_sigint >= self._repeat_after_s:
                raise KeyboardInterrupt
        self.requested = True
        self.signal_number = signum

    def any_rank_requested(self, device: torch.device | str = "cpu") -> bool:
        """Collective: True on every rank when a signal reached any rank, so all ranks stop at the same step.

        Every rank then adopts the same signal (SIGTERM before SIGINT), so all of them exit with the same status
        even where the signal reached only one. Every rank must call it at the same point of the loop. `device`
        must suit the backend (CUDA for NCCL).
        """
        if dist.world_size() == 1:  # no peer to ask: no device round trip, which would make the host wait every step
            return self.requested
        seen = torch.tensor([float(self.signal_number == signum) for signum in _SIGNALS], device=device)
        for signum, count in zip(_SIGNALS, dist.all_reduce_sum_(seen).tolist(), strict=True):
            if count > 0:
                self.requested, self.signal_number = True, signum
                return True
        return False


@contextlib.contextmanager
def signals_held():
    """Block SIGTERM and SIGINT in this thread while the block runs; one that arrives meanwhile waits, and is handled
    on leaving. Processes forked and threads started inside inherit the blocked mask: start workers inside it."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def leave_signals_to_parent(*_ignored) -> None:
    """Run first in a worker process (a DataLoader's worker_init_fn, a Pool's initializer): from now on SIGTERM and
    SIGINT from anyone but the parent are discarded, so a signal sent to the whole group is the parent's to act on.

    The parent can still stop its worker with SIGTERM (DataLoader's and multiprocessing's shutdown send it to a
    worker that does not exit by itself): that one ends the worker at once. Both signals stay blocked in every thread
    of the worker, and one thread takes them with sigwaitinfo, which tells who sent each; a handler could not
    (Python's handlers do not see the sender). Linux keeps one pending SIGTERM per process, so a parent's SIGTERM that
    arrives while the group's is still pending merges into it and is lost: stop workers by their own protocol first
    (DataLoader's end-of-work message, Pool.close), with SIGTERM as the late last resort DataLoader makes it.
    Without sigwaitinfo (macOS), the worker only ignores SIGINT. The worker is killed when the process that forked
    it ends, however that ends: deaf to the group's SIGTERM, it would otherwise outlive a parent that died of it.
    (Linux sends that signal when the forking thread ends: start workers from a thread that outlives them, as the
    main thread does.)
    """
    parent = multiprocessing.parent_process()  # the starting process, also where a fork server forked the worker
    owner = os.getppid() if parent is None else parent.pid
    dist.parent_death_signal(signal.SIGKILL)
    if parent is not None and not parent.is_alive():  # it ended before the line above could take effect
        os._exit(0)
    if not hasattr(signal, "sigwaitinfo"):
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)  # already so when forked inside signals_held()
    threading.Thread(target=_take_signals, args=(owner,), name="ganforge-signals", daemon=True).start()


def _take_signals(owner: int) -> None:
    while True:
        info = signal.sigwaitinfo(_SIGNALS)
        if info.si_signo == signal.SIGTERM and info.si_pid == owner:
            os._exit(0)  # as DataLoader's own worker handler does for its parent's SIGTERM
