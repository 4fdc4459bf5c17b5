"""Suite-wide test plumbing: the `cuda` and `benchmark` markers' skip rules and the two-rank gloo launcher."""

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import torch
import torch.distributed as tdist

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
    them up (RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR/PORT, and the store its agent hosts); every rank must exit 0.
    -> their outputs, by rank.

    The store the ranks meet at is hosted here, on a port bound from the start, as torchrun's agent hosts it: a port
    only picked free here and bound seconds later by rank 0 was now and then taken meanwhile by another test's
    server or gloo connection, and then rank 0 failed to listen and rank 1 waited on the squatter until the timeout
    (2 of 2 runs of the two-rank tests beside other tests' gloo groups; a held port makes the collision impossible).
    """
    store = tdist.TCPStore("127.0.0.1", 0, world_size, is_master=True, wait_for_workers=False)
    env = dict(os.environ, WORLD_SIZE=str(world_size), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(store.port),
               TORCHELASTIC_USE_AGENT_STORE="True", TORCHELASTIC_RESTART_COUNT="0")  # fmt: skip
    deadline = time.monotonic() + timeout
    with tempfile.TemporaryDirectory() as folder:  # files, not pipes: a rank blocked on a full pipe stalls the group
        logs = [open(Path(folder) / f"rank{r}.txt", "w+") for r in range(world_size)]  # noqa: SIM115 - closed below
        procs = [
            subprocess.Popen([sys.executable, "-c", script, *args], env=dict(env, RANK=str(r), LOCAL_RANK=str(r)),
                             stdout=logs[r], stderr=subprocess.STDOUT)
            for r in range(world_size)
        ]  # fmt: skip
        try:  # until every rank ended, one failed (its peers would wait on it for the group's timeout), or time is up
            while None in (codes := [p.poll() for p in procs]) and not any(codes) and time.monotonic() < deadline:
                time.sleep(0.05)
        finally:
            for proc in procs:
                proc.kill()
                proc.wait()
        outputs = []
        for log in logs:
            log.seek(0)
            outputs.append(log.read())
            log.close()
    for rank, (proc, out) in enumerate(zip(procs, outputs, strict=True)):
        assert proc.returncode == 0, f"rank {rank} exited {proc.returncode} (-9: stopped here):\n{out}"
    return outputs


@pytest.fixture(scope="session")
def run_ranks():
    """`run_ranks(script, *args, world_size=2)`: the outputs of `script` run as the ranks of one gloo group."""
    return _run_ranks
