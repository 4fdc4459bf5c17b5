"""Suite-wide test plumbing: the `cuda` and `benchmark` markers' skip rules and the two-rank gloo launcher."""

import os
import subprocess
import sys

import pytest
import torch

from launch_helpers import free_port

NO_GPU_REASON = "needs a CUDA GPU; run `pytest -m cuda` on a machine with one"
SLOW_REASON = "slow (minutes); run it with `pytest -m benchmark`"


def pytest_collection_modifyitems(config, items):
    """Tests marked `cuda` are skipped, with the reason, where torch sees no CUDA device; tests marked `benchmark`
    unless `-m` asks for them, so that `make test` stays fast."""
    skips = {}
    if not torch.cuda.is_available():
        skips["cuda"] = pytest.mark.skip(reason=NO_GPU_REASON)
    if "benchmark" not in (config.getoption("markexpr") or ""):
        skips["benchmark"] = pytest.mark.skip(reason=SLOW_REASON)
    for item in items:
        for marker, skip in skips.items():
            if marker in item.keywords:
                item.add_marker(skip)


def _run_ranks(script: str, *args: str, world_size: int = 2, timeout: float = 120) -> list[str]:
    """Run `script` (Python source) as ranks 0..world_size-1 of a gloo group on this machine, the way torchrun sets
    them up (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR/PORT); every rank must exit 0. -> their outputs, by rank."""
    env = dict(os.environ, WORLD_SIZE=str(world_size), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, *args],
            env=dict(env, RANK=str(r), LOCAL_RANK=str(r)),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for r in range(world_size)
    ]
    try:
        outputs = [p.communicate(timeout=timeout)[0] for p in procs]
    finally:
        for proc in procs:
            proc.kill()
            proc.wait()
    for rank, (proc, out) in enumerate(zip(procs, outputs, strict=True)):
        assert proc.returncode == 0, f"rank {rank} exited {proc.returncode}:\n{out}"
    return outputs


@pytest.fixture(scope="session")
def run_ranks():
    """`run_ranks(script, *args, world_size=2)`: the outputs of `script` run as the ranks of one gloo group."""
    return _run_ranks
