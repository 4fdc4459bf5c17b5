"""Two gloo processes: rank 0 writes, both learn the outcome, and a failed write raises on every rank."""

import os
import socket
import subprocess
import sys
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
    state = checkpoint.load_latest(ckpt_dir)
    print(f"rank {dist.rank()} loaded the state of rank {state['rank']}")
    dist.shutdown()
    """
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _run_two_ranks(script: str, *args: str) -> list[str]:
    """Run `script` as ranks 0 and 1 of a gloo group on this machine; both must exit 0. -> their outputs."""
    env = dict(os.environ, WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, *args],
            env=dict(env, RANK=str(r), LOCAL_RANK=str(r)),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for r in range(2)
    ]
    outputs = [p.communicate(timeout=120)[0] for p in procs]
    for proc, out in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, out
    return outputs


def test_only_rank0_writes_and_a_failure_reaches_every_rank(tmp_path):
    for rank, out in enumerate(_run_two_ranks(_WORKER, str(tmp_path))):
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


def test_a_signal_on_one_rank_stops_every_rank_with_the_same_status():
    for rank, out in enumerate(_run_two_ranks(_PREEMPT_WORKER)):
        assert f"rank {rank} requested=True exit_code=143" in out, out
