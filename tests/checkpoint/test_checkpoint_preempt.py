import multiprocessing
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
import torch

from ganforge import preempt
from ganforge.preempt import PreemptionGuard, signals_held


def _sentinel(signum, frame):
    raise AssertionError("the previous handler must not run while the guard is active")


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signal_sets_flag_and_handlers_are_restored(signum, code):
    previous = {s: signal.signal(s, _sentinel) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        with PreemptionGuard() as guard:
            assert not guard.requested and guard.exit_code is None
            signal.raise_signal(signum)
            assert guard.requested and guard.exit_code == code
            assert guard.any_rank_requested() is True
        assert signal.getsignal(signal.SIGTERM) is _sentinel
        assert signal.getsignal(signal.SIGINT) is _sentinel
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def test_second_ctrl_c_interrupts_at_once():
    # what the process had before: Python's default handler, or SIG_IGN when started as a background job
    before = signal.getsignal(signal.SIGINT)
    with PreemptionGuard(repeat_after_s=0) as guard:
        signal.raise_signal(signal.SIGINT)
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
        signal.raise_signal(signal.SIGTERM)  # a later SIGTERM still just records itself
        assert guard.exit_code == 143
    assert signal.getsignal(signal.SIGINT) is before


def test_any_rank_requested_is_false_without_a_signal():
    with PreemptionGuard() as guard:
        assert guard.any_rank_requested() is False


def _not_interrupting(signum: int) -> None:
    try:
        signal.raise_signal(signum)
    except KeyboardInterrupt:  # pytest would take it for the user's and stop the session
        pytest.fail("taken for a second Ctrl-C")


def test_one_sigint_arriving_twice_at_once_is_one_interrupt(monkeypatch):
    """Sent to every process of a torchrun job, a SIGINT reaches each worker directly and again through torchrun."""
    clock = [100.0]
    monkeypatch.setattr(preempt.time, "monotonic", lambda: clock[0])
    with PreemptionGuard() as guard:
        signal.raise_signal(signal.SIGINT)
        clock[0] += 0.9
        _not_interrupting(signal.SIGINT)  # the forwarded copy: still one interrupt, the save goes on
        assert guard.exit_code == 130
        clock[0] += 0.1
        with pytest.raises(KeyboardInterrupt):  # a person pressing Ctrl-C again a second after the first
            signal.raise_signal(signal.SIGINT)


def test_a_sigint_adopted_from_another_rank_is_not_this_process_first_ctrl_c(monkeypatch):
    peer_got_sigint = torch.tensor([0.0, 1.0])  # the all-reduced [SIGTERM, SIGINT] counts when only a peer got it
    monkeypatch.setattr(preempt.dist, "world_size", lambda: 2)  # a single process asks no peer
    monkeypatch.setattr(preempt.dist, "all_reduce_sum_", lambda seen: seen.add_(peer_got_sigint))
    with PreemptionGuard(repeat_after_s=0) as guard:
        assert guard.any_rank_requested() and guard.exit_code == 130
        _not_interrupting(signal.SIGINT)  # this rank's own copy, forwarded a moment later
        assert guard.exit_code == 130


def test_held_signals_wait_for_the_end_of_the_block_and_threads_started_inside_never_take_them():
    masks = []
    with PreemptionGuard() as guard, signals_held():
        signal.raise_signal(signal.SIGTERM)
        held = not guard.requested
        thread = threading.Thread(target=lambda: masks.append(signal.pthread_sigmask(signal.SIG_BLOCK, [])))
        thread.start()
        thread.join()
    assert held and guard.exit_code == 143
    assert {signal.SIGTERM, signal.SIGINT} <= masks[0]
    assert not {signal.SIGTERM, signal.SIGINT} & signal.pthread_sigmask(signal.SIG_BLOCK, [])


def _worker() -> None:
    preempt.leave_signals_to_parent()
    time.sleep(60)


def _parent(pid_file: str) -> None:
    with signals_held():
        worker = multiprocessing.get_context("fork").Process(target=_worker)
        worker.start()
    Path(pid_file).write_text(str(worker.pid))
    time.sleep(60)


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_a_worker_outlives_others_signals_but_not_its_parent(tmp_path):
    """Deaf to SIGTERM and SIGINT from anyone but its parent, a worker must still end with the parent, however the
    parent ends (here SIGKILL, where no shutdown code runs)."""
    pid_file = tmp_path / "worker.pid"
    parent = multiprocessing.get_context("fork").Process(target=_parent, args=(str(pid_file),))
    parent.start()
    worker = None
    try:
        deadline = time.monotonic() + 30
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline and parent.is_alive()
            time.sleep(0.01)
        worker = int(pid_file.read_text())
        for name in ("TERM", "INT"):
            subprocess.run(["kill", f"-{name}", str(worker)], check=True)
        time.sleep(0.3)
        assert _running(worker)
        parent.kill()
        parent.join(timeout=10)
        deadline = time.monotonic() + 2
        while _running(worker) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not _running(worker), "the worker outlived its parent"
    finally:
        parent.kill()
        if worker is not None and _running(worker):
            os.kill(worker, signal.SIGKILL)
