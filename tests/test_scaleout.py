"""Scale-out through torchrun on one machine, with gloo: a SIGKILL of the whole group and a rerun, elastic restart,
two launchers as two nodes, and what happens to the workers when only their launcher is killed.

Every run is the same 8 steps of 8 images on 2 ranks (checkpoints every 2 steps) with ADA moving p (--ada-kimg 0.1:
0.32 an adjustment, towards a --target below what D reaches), so a run resumed from a checkpoint continues from p > 0
and ADA's accumulators mid-way; a run that was killed and rerun, went through a restart or ran as two nodes must end
with the tensors of the plain 2-process run, bit for bit.
"""

import os
import signal
import sys
import time
from pathlib import Path

import pytest
import torch.distributed as tdist

from ganforge import checkpoint, dist
from ganforge.checkpoint import inspect
from ganforge.errors import UserError
from launch_helpers import (
    TIMEOUT,
    alive,
    assert_identical,
    descendants,
    kill_all,
    kill_then_rerun,
    rendezvous_store,
    run_dir,
    start,
    timed_run,
    tiny_archive,
    wait_for_checkpoint,
)

NIMG = 64
TRAIN_ARGS = ["--cfg", "tiny", "--batch", "8", "--batch-gpu", "4", "--kimg", str(NIMG / 1000), "--tick", "0.016",
              "--snap", "1", "--seed", "3", "--workers", "0", "--device", "cpu", "--ada-kimg", "0.1", "--target",
              "0.2", "--no-report"]  # fmt: skip
STOP_SECONDS = 20  # a worker whose launcher died must be gone well within this


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return tiny_archive(tmp_path_factory.mktemp("data"))


def _torchrun(data: Path, outdir: Path, *launcher: str, extra: tuple = ()) -> list[str]:
    train = ["train", "--data", str(data), "--outdir", str(outdir), *TRAIN_ARGS, *extra]
    return [sys.executable, "-m", "torch.distributed.run", *launcher, "-m", "ganforge", *train]


def _final_state(outdir: Path) -> dict:
    state = checkpoint.load_latest(run_dir(outdir) / "checkpoints")
    assert state is not None and state["loop"]["cur_nimg"] == NIMG, state and state["loop"]
    return state


@pytest.fixture(scope="module")
def reference_run(data, tmp_path_factory) -> tuple[dict, float]:
    """One launcher with 2 processes, never interrupted: its final state and kill window."""
    outdir = tmp_path_factory.mktemp("reference")
    window = timed_run(_torchrun(data, outdir, "--standalone", "--nproc-per-node=2"), outdir)
    middle = checkpoint.load(run_dir(outdir) / "checkpoints" / "ckpt-000000048")
    # What a resume from this checkpoint carries on: p > 0 and ADA's accumulators mid-way
    assert middle["augment"]["pipe"]["p"].item() > 0.1 and middle["augment"]["ada"]["count"] > 0, middle["augment"]
    return _final_state(outdir), window


@pytest.fixture(scope="module")
def reference(reference_run) -> dict:
    return reference_run[0]


def test_the_group_killed_at_a_random_moment_then_rerun_ends_as_if_uninterrupted(data, reference_run, tmp_path):
    """SIGKILL of the launcher and both workers at once (the machine dies), then the same command."""
    reference, window = reference_run
    output = kill_then_rerun(_torchrun(data, tmp_path, "--standalone", "--nproc-per-node=2"), tmp_path, window, NIMG)
    assert "resuming at" in output, output[-4000:]
    assert_identical(reference, _final_state(tmp_path))


def test_a_worker_killed_mid_run_is_restarted_and_the_run_ends_as_if_uninterrupted(data, reference, tmp_path):
    launcher = ("--standalone", "--nproc-per-node=2", "--max-restarts=1", "--monitor-interval=0.2")
    proc = start(_torchrun(data, tmp_path, *launcher))
    try:
        wait_for_checkpoint(proc, tmp_path)
        os.kill(descendants(proc.pid)[-1], signal.SIGKILL)
        output = proc.communicate(timeout=TIMEOUT)[0]
    finally:
        kill_all(proc)
    assert proc.returncode == 0, output[-4000:]
    assert "resuming at" in output, output[-4000:]
    assert_identical(reference, _final_state(tmp_path))


def test_two_launchers_as_two_nodes_end_like_one_launcher_with_two_processes(data, reference, tmp_path):
    with rendezvous_store() as endpoint:
        rendezvous = ("--rdzv-backend=c10d", f"--rdzv-endpoint={endpoint}", "--rdzv-id=scaleout-test")
        nodes = [start(_torchrun(data, tmp_path, "--nnodes=2", f"--node-rank={node}", "--nproc-per-node=1",
                                 *rendezvous)) for node in range(2)]  # fmt: skip
        try:
            outputs = [node.communicate(timeout=TIMEOUT)[0] for node in nodes]
        finally:
            for node in nodes:
                kill_all(node)
    for node, output in zip(nodes, outputs, strict=True):
        assert node.returncode == 0, output[-4000:]
    assert run_dir(tmp_path).name.endswith("-gpus2-batch8")
    assert_identical(reference, _final_state(tmp_path))


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM])
def test_killing_only_the_launcher_stops_every_worker_after_a_checkpoint(data, tmp_path, signum):
    """SIGKILL: the workers learn of it from the kernel (their parent died) and take the SIGTERM path themselves;
    SIGTERM: torchrun forwards it. Either way every rank stops at the same step, which is checkpointed."""
    proc = start(_torchrun(data, tmp_path, "--standalone", "--nproc-per-node=2", extra=("--kimg", "2")))
    workers = []
    try:
        wait_for_checkpoint(proc, tmp_path)
        workers = descendants(proc.pid)
        signalled = time.monotonic()
        os.kill(proc.pid, signum)
        while [pid for pid in workers if alive(pid)] and time.monotonic() < signalled + STOP_SECONDS:
            time.sleep(0.05)
        proc.communicate(timeout=TIMEOUT)
    finally:
        kill_all(proc)
        for pid in workers:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
    assert len(workers) == 2 and not [pid for pid in workers if alive(pid)], "workers outlived their launcher"
    assert proc.returncode != 0
    log = (run_dir(tmp_path) / "log.txt").read_text()
    stops = [line for line in log.splitlines() if line.startswith("stopping on signal after")]
    assert len(stops) == 1, log[-2000:]
    *_, newest = inspect.verify(run_dir(tmp_path))
    assert newest.problem is None, newest
    assert stops[0].split()[4] == f"{newest.nimg / 1000:g}", (stops, newest)


@pytest.fixture
def elastic_env(monkeypatch):
    """The environment torchrun gives a worker when its store is shared between restart attempts."""
    monkeypatch.setenv("TORCHELASTIC_USE_AGENT_STORE", "True")
    monkeypatch.setenv("TORCHELASTIC_MAX_RESTARTS", "3")
    monkeypatch.setenv("GROUP_WORLD_SIZE", "1")
    return monkeypatch


def test_each_restart_attempt_sees_none_of_the_previous_attempts_keys(elastic_env):
    """A restarted worker must not read the address a dead worker of the previous attempt published."""
    shared = tdist.HashStore()
    elastic_env.setenv("TORCHELASTIC_RESTART_COUNT", "0")
    dist._attempt_store(shared, 0).set("rank_0_address", "127.0.0.1:30098")
    elastic_env.setenv("TORCHELASTIC_RESTART_COUNT", "1")
    second = dist._attempt_store(shared, 0)
    assert not second.check(["rank_0_address"])
    second.set("rank_0_address", "127.0.0.1:41000")
    assert second.get("rank_0_address") == b"127.0.0.1:41000"


def test_each_group_a_process_joins_sees_none_of_its_earlier_groups_keys_and_ranks_agree_on_it(elastic_env):
    """A process that trains twice under one agent store (two `run` calls) forms a second group whose ranks must not
    read the first group's addresses (2 of 5 two-rank runs of three trainings hung before), and whose ranks, each
    counting its own joins, name the group alike."""
    shared = tdist.HashStore()
    elastic_env.setenv("TORCHELASTIC_RESTART_COUNT", "0")
    first = [dist._attempt_store(shared, rank) for rank in (0, 1)]
    first[0].set("rank_0_address", "127.0.0.1:30098")
    assert first[1].get("rank_0_address") == b"127.0.0.1:30098"
    second = [dist._attempt_store(shared, rank) for rank in (1, 0)]
    assert not any(store.check(["rank_0_address"]) for store in second)
    second[1].set("rank_0_address", "127.0.0.1:41000")
    assert second[0].get("rank_0_address") == b"127.0.0.1:41000"


def test_restarts_on_several_nodes_with_a_shared_store_are_refused_with_the_fix(elastic_env):
    elastic_env.setenv("GROUP_WORLD_SIZE", "2")
    with pytest.raises(UserError, match="TORCH_DISABLE_SHARE_RDZV_TCP_STORE=1"):
        dist._attempt_store(tdist.HashStore(), 0)
