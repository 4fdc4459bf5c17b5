"""The peak memory of a training step, predicted from a trace on fake tensors before any of it is spent, and `train`
refusing a step that does not fit the GPU it names with the figure and the --batch-gpu that fits.

The trace is checked against a real step on the CPU, whose allocations torch's profiler records one by one
(bench/memory.py:measured_peak_bytes); benchmarks/step_memory.py prints the comparison for larger configs, and on
a GPU the same test compares with torch.cuda.max_memory_allocated.
"""

import pytest
import torch
import torch.distributed as tdist
from click.testing import CliRunner
from train_helpers import make_dataset, tiny_args, tiny_options

from ganforge import dist
from ganforge.bench.memory import measured_peak_bytes
from ganforge.cli import main as cli_main
from ganforge.train import resolve, step_memory
from ganforge.train.step_memory import (
    CUDA_BLOCK,
    CUDA_CONTEXT_BYTES,
    HEADROOM,
    LiveBytes,
    fit_problem,
    fits,
    smaller_micro_batches,
    step_peak_bytes,
    with_batch_gpu,
)

TOLERANCE = 0.25


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("step_memory") / "squares", count=16, res=16, channels=3)


@pytest.fixture(scope="module")
def tiny(data, tmp_path_factory):
    """StyleGAN2 with ADA, 8 images per step in micro-batches of 8, every phase."""
    return resolve(tiny_options(data, tmp_path_factory.mktemp("runs"), batch=8, aug="ada"))


@pytest.fixture(scope="module")
def tiny_peak(tiny):
    return step_peak_bytes(tiny)


def test_traced_peak_is_the_measured_cpu_peak_within_a_quarter(tiny):
    traced, measured = step_peak_bytes(tiny, cuda=False), measured_peak_bytes(tiny, torch.device("cpu"))
    assert abs(traced - measured) <= TOLERANCE * measured, (traced, measured)


def test_live_bytes_count_each_storage_once_until_it_is_freed():
    with LiveBytes(block=CUDA_BLOCK) as counted:
        x = torch.zeros(1000)  # 4000 bytes: 4096 in 512-byte blocks
        view = x[10:]  # the same storage
        y = x + 1
        del y  # freed: live drops, the peak stays
        z = view * 2
    assert counted.peak == 2 * 4096 and counted.live == 2 * 4096
    del x, view, z


def test_smaller_micro_batches_keep_the_batch_and_split_into_groups(tiny):
    assert smaller_micro_batches(tiny) == [4, 2]  # 8 images per step; path length halves the micro-batch
    assert with_batch_gpu(tiny, 2).model.mbstd_group == 2 and with_batch_gpu(tiny, 4).schedule.batch_gpu == 4


def test_the_largest_micro_batch_that_fits_is_found_and_confirmed(tiny, monkeypatch):
    """Peaks in MiB of 100 + 10 per image, but 4 images take 150 (more than the line through 2 and 8 says): 8 does
    not fit in 140 with the headroom, the line picks 4, its trace does not fit, and 2 is the answer."""
    traced = []

    def peaks(cfg, cuda=True):
        traced.append(cfg.schedule.batch_gpu)
        return {8: 180, 4: 150, 2: 120}[cfg.schedule.batch_gpu] * 2**20

    monkeypatch.setattr(step_memory, "step_peak_bytes", peaks)
    available = round(140 * 2**20 * (1 + HEADROOM))
    assert step_memory.largest_fitting(tiny, available, 180 * 2**20) == (2, 120 * 2**20) and traced == [2, 4]
    assert step_memory.largest_fitting(tiny, round(150 * 2**20 * (1 + HEADROOM)), 180 * 2**20) == (4, 150 * 2**20)
    problem = step_memory.fit_problem(tiny, available, "on a toy")
    assert problem.startswith("--batch-gpu 8: a training step of --cfg tiny at 16x16 in fp32 needs about 180 MiB")
    assert "more than the 154 MiB on a toy; pass --batch-gpu 2 (about 120 MiB; the same --batch" in problem


@pytest.mark.parametrize(("preset", "advice"), [("tiny", "--grad-checkpoint, "), ("tiny3", "")])
def test_train_refuses_a_step_no_micro_batch_fits_with_the_figure_and_exit_2(data, tmp_path, preset, advice):
    """--grad-checkpoint is suggested where the family can recompute its blocks (not StyleGAN3's: refused)."""
    available = 2**20  # 1 MiB: less than the weights
    args = tiny_args(data, tmp_path, batch=8, dry_run=True, gpu_memory=f"{(available + CUDA_CONTEXT_BYTES) / 2**30!r}")
    args[args.index("--cfg") + 1] = preset
    result = CliRunner().invoke(cli_main, args)
    assert result.exit_code == 2, result.output
    (line,) = [line for line in result.output.splitlines() if line.strip()]
    assert line.startswith(f"error: --batch-gpu 8: a training step of --cfg {preset} at 16x16 in fp32 needs about")
    assert "more than the 1.0 MiB that --gpu-memory" in line
    assert line.endswith(f"no smaller --batch-gpu fits: try {advice}a lower --cbase, or a GPU with more memory")


def test_a_step_that_fits_is_let_through_and_the_rng_kept(tiny, tiny_peak):
    assert fits(tiny_peak, 2**30)
    torch.manual_seed(3)
    expected = torch.rand(4)
    torch.manual_seed(3)
    assert fit_problem(tiny, 2**30, "on a toy") is None
    assert torch.equal(torch.rand(4), expected)


def test_the_trace_issues_no_collective_with_the_group_joined(tiny, tiny_peak, monkeypatch):
    """Under torchrun every rank traces its own step while the group is joined: a collective there would wait for
    peers that are not tracing. The group is stood in for by one that fails any collective."""

    def collective(*args, **kwargs):
        raise AssertionError("a collective was issued")

    monkeypatch.setattr(tdist, "is_initialized", lambda: True)
    monkeypatch.setattr(tdist, "get_world_size", lambda *args: 2)
    monkeypatch.setattr(tdist, "get_rank", lambda *args: 1)
    for name in ("all_reduce", "broadcast", "barrier", "broadcast_object_list", "all_gather_object"):
        monkeypatch.setattr(tdist, name, collective)
    assert dist.world_size() == 2 and step_peak_bytes(tiny) == tiny_peak


@pytest.mark.cuda
def test_traced_peak_is_the_cuda_allocator_peak_within_a_quarter(data, tmp_path):
    cfg = resolve(tiny_options(data, tmp_path, batch=8, aug="ada", device="cuda"))
    traced, measured = step_peak_bytes(cfg), measured_peak_bytes(cfg, torch.device("cuda"))
    assert abs(traced - measured) <= TOLERANCE * measured, (traced, measured)
