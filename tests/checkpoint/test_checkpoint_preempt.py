import signal

import pytest

from ganforge.preempt import PreemptionGuard


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
    with PreemptionGuard() as guard:
        signal.raise_signal(signal.SIGINT)
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
        signal.raise_signal(signal.SIGTERM)  # a later SIGTERM still just records itself
        assert guard.exit_code == 143
    assert signal.getsignal(signal.SIGINT) is before


def test_any_rank_requested_is_false_without_a_signal():
    with PreemptionGuard() as guard:
        assert guard.any_rank_requested() is False
