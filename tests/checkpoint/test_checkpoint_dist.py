"""Two gloo processes: rank 0 writes, both learn the outcome, and a failed write raises on every rank."""

import textwrap

_WORKER = textwrap.dedent(
    """
    import errno, sys
    from pathlib import Path
    from ganforge import checkpoint, dist
    from ganforge.checkpoint import store

    dist.init("cpu")
    ckpt_dir = Path(sys.argv[1])
    keep = checkpoint.Retention(keep_last=2)
    path = checkpoint.save(ckpt_dir, {"rank": dist.rank()}, tag="1000", retention=keep)
    assert path == ckpt_dir / "ckpt-000001000", path
    if dist.rank() == 0:
        def full(path, data):
            raise OSError(errno.ENOSPC, "No space left on device")
        store.write_file = full
    try:
        checkpoint.save(ckpt_dir, {"rank": dist.rank()}, tag="2000", retention=keep)
    except checkpoint.CheckpointWriteError as error:
        print(f"rank {dist.rank()} raised: {error}")
    state = checkpoint.load_latest(ckpt_dir, check_state=False)
    print(f"rank {dist.rank()} loaded the state of rank {state['rank']}")
    dist.shutdown()
    """
)


def test_only_rank0_writes_and_a_failure_reaches_every_rank(tmp_path, run_ranks):
    for rank, out in enumerate(run_ranks(_WORKER, str(tmp_path))):
        assert f"rank {rank} raised: checkpoint {tmp_path}/ckpt-000002000: writing failed" in out, out
        assert f"rank {rank} loaded the state of rank 0" in out, out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt-000001000", "latest"]


_PREEMPT_WORKER = textwrap.dedent(
    """
    import os, signal
    from ganforge import dist
    from ganforge.preempt import PreemptionGuard

    dist.init("cpu")
    with PreemptionGuard() as guard:
        assert not guard.any_rank_requested()
        if dist.rank() == 1:
            os.kill(os.getpid(), signal.SIGTERM)
        print(f"rank {dist.rank()} requested={guard.any_rank_requested()} exit_code={guard.exit_code}")
    dist.barrier()
    dist.shutdown()
    """
)


def test_a_signal_on_one_rank_stops_every_rank_with_the_same_status(run_ranks):
    for rank, out in enumerate(run_ranks(_PREEMPT_WORKER)):
        assert f"rank {rank} requested=True exit_code=143" in out, out
