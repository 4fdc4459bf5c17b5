import multiprocessing
import os
import signal
import subprocess
import time

import numpy as np
import pytest
import torch
from data_testfiles import write_fast, write_nvlabs_zip

from ganforge import preempt
from ganforge.data import make_loader, open_dataset
from ganforge.data.loader import host_loader, reads_in_process, to_float
from ganforge.data.sampler import InfiniteSampler
from ganforge.errors import UserError


@pytest.fixture
def dataset(tmp_path):
    rng = np.random.default_rng(0)
    source = [rng.integers(0, 256, (8, 8, 3), dtype=np.uint8) for _ in range(9)]
    return open_dataset(write_nvlabs_zip(tmp_path / "x.zip", source, [i % 3 for i in range(9)]), mirror=True)


@pytest.fixture
def fast_dataset(tmp_path):
    """9 images with 3 classes, x-flips on: 18 positions per pass."""
    source = list(np.random.default_rng(0).integers(0, 256, (9, 8, 8, 3), dtype=np.uint8))
    return open_dataset(write_fast(tmp_path / "x.gfd", source, [i % 3 for i in range(9)], ["a", "b", "c"]), mirror=True)


def batches(loader, count):
    return [next(loader) for _ in range(count)]


def test_batches_follow_the_sampler_and_convert_to_minus_one_one(dataset):
    images, labels = next(make_loader(dataset, 4, seed=5, workers=0))
    indices = [i for i, _ in zip(InfiniteSampler(len(dataset), seed=5), range(4), strict=False)]
    expected = torch.stack([dataset[i][0] for i in indices]).float() / 127.5 - 1
    assert images.dtype == torch.float32 and images.shape == (4, 3, 8, 8)
    assert torch.equal(images, expected)
    assert torch.equal(labels, torch.stack([dataset[i][1] for i in indices]))
    assert images.min() >= -1 and images.max() <= 1


def test_first_batches_identical_with_0_and_2_workers(dataset):
    serial = batches(make_loader(dataset, 3, seed=1, workers=0), 4)
    parallel = batches(make_loader(dataset, 3, seed=1, workers=2, timeout_s=60), 4)
    for (a, la), (b, lb) in zip(serial, parallel, strict=True):
        assert torch.equal(a, b) and torch.equal(la, lb)


def test_two_ranks_together_see_the_one_rank_batch(dataset):
    single = next(make_loader(dataset, 4, seed=2, workers=0))[0]
    halves = [next(make_loader(dataset, 2, seed=2, rank=r, world_size=2, workers=0))[0] for r in range(2)]
    assert torch.equal(torch.stack([halves[0][0], halves[1][0], halves[0][1], halves[1][1]]), single)


def test_resume_position_continues_the_sequence(dataset):
    loader = make_loader(dataset, 2, seed=3, workers=0)
    first_three = batches(loader, 3)
    resumed = next(make_loader(dataset, 2, seed=3, workers=0, start=4))
    assert torch.equal(resumed[0], first_three[2][0])


class _DyingDataset(torch.utils.data.Dataset):
    """Kills its worker process the way an exhausted /dev/shm does (SIGBUS)."""

    def __len__(self):
        return 4

    def __getitem__(self, index):
        os.kill(os.getpid(), signal.SIGBUS)
        return torch.zeros(3, 4, 4, dtype=torch.uint8), torch.zeros(0)


def test_dead_worker_names_shm_size_and_ipc_host():
    with pytest.raises(UserError, match=r"--shm-size.*--ipc=host"):
        next(make_loader(_DyingDataset(), 2, workers=1, timeout_s=30))


class _StuckDataset(_DyingDataset):
    def __getitem__(self, index):
        time.sleep(2.5)  # longer than the timeout; short so that shutting the worker down is quick


def test_stuck_worker_times_out_with_a_user_error():
    with pytest.raises(UserError, match="no batch from the workers for 1 s"):
        next(make_loader(_StuckDataset(), 2, workers=1, timeout_s=1))


# (rank, world size, start): one rank from the beginning, resumed mid-pass (position 8 of 18), and two ranks resumed.
SHARDS = [(0, 1, 0), (0, 1, 8), (0, 2, 8), (1, 2, 8)]


def test_fast_format_read_in_process_equals_dataloader_workers(fast_dataset):
    assert reads_in_process(fast_dataset)
    for rank, world, start in SHARDS:
        in_process = batches(make_loader(fast_dataset, 4 // world, 7, rank, world, start, workers=2), 6)
        from_workers = host_loader(fast_dataset, 4 // world, 7, rank, world, start, 2, timeout_s=60, in_process=False)
        for (images, labels), (raw, raw_labels) in zip(in_process, from_workers, strict=False):
            assert torch.equal(images, to_float(raw)) and torch.equal(labels, raw_labels)
            assert labels.shape == (4 // world, 3) and torch.all(labels.sum(1) == 1)


def test_fast_format_order_flips_labels_resume_and_two_ranks(fast_dataset):
    one_rank = batches(make_loader(fast_dataset, 4, seed=7), 5)  # 20 positions: a whole pass, flipped copies too
    indices = [i for i, _ in zip(InfiniteSampler(len(fast_dataset), seed=7), range(20), strict=False)]
    assert torch.equal(
        torch.cat([b[0] for b in one_rank]), to_float(torch.stack([fast_dataset[i][0] for i in indices]))
    )
    assert torch.equal(torch.cat([b[1] for b in one_rank]), torch.stack([fast_dataset[i][1] for i in indices]))
    resumed = batches(make_loader(fast_dataset, 4, seed=7, start=8), 3)
    assert all(torch.equal(a[0], b[0]) for a, b in zip(one_rank[2:], resumed, strict=True))
    halves = [next(make_loader(fast_dataset, 2, 7, rank, 2, start=8))[0] for rank in range(2)]
    assert torch.equal(torch.stack([halves[0][0], halves[1][0], halves[0][1], halves[1][1]]), one_rank[2][0])


def test_fast_format_starts_no_worker_processes_where_a_zip_does(fast_dataset, dataset):
    before = set(multiprocessing.active_children())
    next(make_loader(fast_dataset, 4, workers=2))
    assert set(multiprocessing.active_children()) - before == set()
    zip_loader = make_loader(dataset, 4, workers=2, timeout_s=60)
    next(zip_loader)
    assert not reads_in_process(dataset) and len(set(multiprocessing.active_children()) - before) == 2


def test_workers_leave_group_signals_to_this_process(dataset, tmp_path, monkeypatch):
    """SIGTERM and SIGINT from anyone else (a signal to the whole process group, SLURM's to every process of a step)
    leave the workers running: only this process acts on them. The workers are born with both signals blocked, so
    none can kill them before they are set up; and SIGTERM from this process (DataLoader's own last resort) still
    ends one at once."""
    set_up = preempt.leave_signals_to_parent

    def recording(worker_id):  # the mask the worker was born with: torch changes none before calling this
        partial = tmp_path / f"writing{worker_id}"  # renamed when whole: the test polls for the name, then reads
        partial.write_text(repr(sorted(signal.pthread_sigmask(signal.SIG_BLOCK, []))))
        partial.replace(tmp_path / f"born{worker_id}")
        set_up(worker_id)

    monkeypatch.setattr(preempt, "leave_signals_to_parent", recording)
    before = set(multiprocessing.active_children())
    held = [iter(host_loader(dataset, 3, workers=2, timeout_s=60))]  # dropped, the loader stops its workers
    workers = sorted(set(multiprocessing.active_children()) - before, key=lambda w: w.pid)
    try:
        next(held[0])
        deadline = time.monotonic() + 60  # the other worker may not have started yet on a busy machine
        while not all((tmp_path / f"born{i}").exists() for i in range(2)) and time.monotonic() < deadline:
            time.sleep(0.01)
        for worker_id in range(2):
            born = (tmp_path / f"born{worker_id}").read_text()
            assert "SIGTERM" in born and "SIGINT" in born, born
        for name in ("TERM", "INT"):
            subprocess.run(["kill", f"-{name}", *(str(w.pid) for w in workers)], check=True)
        time.sleep(0.3)
        assert [next(held[0])[0].shape for _ in range(8)] == [(3, 3, 8, 8)] * 8  # a dead worker would raise here
        assert len(workers) == 2 and all(w.is_alive() for w in workers)
        workers[0].terminate()
        workers[0].join(timeout=10)
        assert workers[0].exitcode == 0
        held.clear()  # DataLoader shuts the other one down
        workers[1].join(timeout=10)
        assert not workers[1].is_alive()
    finally:  # a worker deaf to its parent would otherwise hang this process's exit (multiprocessing joins it)
        held.clear()  # the loader shut down first: its SIGCHLD handler must not meet the kill below
        for worker in workers:
            if worker.is_alive():
                worker.kill()
