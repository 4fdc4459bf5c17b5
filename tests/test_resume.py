"""Exact resume, end to end through the CLI, and the refusal of a changed configuration.

A tiny preset on a tiny generated dataset: a run that was never interrupted and one killed with SIGKILL at a random
moment after its first checkpoint, then resumed by running the same command, end with bitwise-identical G, D, G_ema
and optimiser states (in two gloo processes under torchrun: tests/test_scaleout.py). All on the CPU, where every kernel
is deterministic.

The run is 17 steps of 8 images with one checkpoint in between, before step 13 (104 images), so every resumed stretch
holds an R1 step (every 16 steps: 0 and 16), path-length steps (every 4: 16), an ADA adjustment from accumulators
the checkpoint left half-filled (after steps 3, 7, 11 and 15), and augmentation at p > 0: with --ada-kimg 0.1 each
adjustment moves p by 0.32, and --target 0.2 lies below what D reaches on these reals by step 11.
"""

import errno
import sys
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from ganforge import checkpoint
from ganforge.checkpoint import store
from ganforge.cli import main
from launch_helpers import (
    CHILD_THREADS,
    assert_identical,
    intra_op_threads,
    kill_then_rerun,
    run_command,
    run_dir,
    timed_run,
    tiny_archive,
)

KIMG, MIDDLE = 0.136, 104  # 17 steps of 8 images; the checkpoint in between, at 104 images
TRAIN_ARGS = ["--cfg", "tiny", "--batch", "8", "--batch-gpu", "4", "--kimg", str(KIMG), "--tick", "0.104",
              "--snap", "1", "--seed", "3", "--workers", "0", "--device", "cpu", "--ada-kimg", "0.1",
              "--target", "0.2", "--no-report"]  # fmt: skip


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return tiny_archive(tmp_path_factory.mktemp("data"))


def _command(data: Path, outdir: Path, nproc: int = 1, extra: tuple = ()) -> list[str]:
    args = ["train", "--data", str(data), "--outdir", str(outdir), *TRAIN_ARGS, *extra]
    if nproc == 1:
        return [sys.executable, "-m", "ganforge", *args]
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}"]
    return [*launcher, "-m", "ganforge", *args]


def _final_state(outdir: Path) -> dict:
    state = checkpoint.load_latest(run_dir(outdir) / "checkpoints")
    assert state is not None and state["loop"]["cur_nimg"] == round(KIMG * 1000), state and state["loop"]
    return state


@pytest.fixture(scope="module")
def reference_run(data, tmp_path_factory) -> tuple[Path, dict, float]:
    """The uninterrupted single-process run: its OUTDIR, final state and kill window."""
    outdir = tmp_path_factory.mktemp("reference")
    window = timed_run(_command(data, outdir), outdir)
    middle = checkpoint.load(run_dir(outdir) / "checkpoints" / f"ckpt-{MIDDLE:09d}")
    # What a resume from the middle checkpoint must carry on: augmentation at p > 0 and ADA's accumulators mid-way.
    assert middle["augment"]["pipe"]["p"].item() > 0.1 and middle["augment"]["ada"]["updates"] == 1, middle["augment"]
    return outdir, _final_state(outdir), window


@pytest.fixture(scope="module")
def reference(reference_run) -> dict:
    return reference_run[1]


def _run_here(data: Path, outdir: Path, extra: tuple = (), expect: int = 0, threads: int = CHILD_THREADS) -> str:
    """The command of `_command(data, outdir)` in this process (where a process boundary adds nothing to the test),
    with as many intra-op threads as the commands in processes of their own have unless told; its output, stdout then
    stderr."""
    args = ["train", "--data", str(data), "--outdir", str(outdir), *TRAIN_ARGS, *extra]
    with intra_op_threads(threads):
        result = CliRunner().invoke(main, args)
    assert result.exit_code == expect, f"exit {result.exit_code} != {expect}:\n{result.output[-4000:]}"
    return result.stdout + result.stderr


def test_two_identical_runs_give_identical_tensors(data, reference, tmp_path):
    _run_here(data, tmp_path)
    assert_identical(reference, _final_state(tmp_path))


def test_a_resume_under_another_thread_count_says_so_and_under_the_same_one_says_nothing(data, tmp_path):
    """CPU sums round by the thread count, so a checkpoint records its writer's and a resume with another one warns
    that the run will not continue exactly."""
    _run_here(data, tmp_path, ("--kimg", "0.008"), threads=1)
    assert checkpoint.load(run_dir(tmp_path) / "checkpoints" / "ckpt-000000008")["loop"]["intra_op_threads"] == 1
    changed = _run_here(data, tmp_path, ("--kimg", "0.016"), threads=2)
    assert "resuming at 0.008 kimg" in changed
    assert (
        "warning: the checkpoint was written with 1 intra-op thread(s), this process has 2: CPU sums round "
        "differently, so the run will not continue exactly as one that never stopped; set OMP_NUM_THREADS=1 to resume "
        "it exactly"
    ) in changed
    same = _run_here(data, tmp_path, ("--kimg", "0.024"), threads=2)
    assert "resuming at 0.016 kimg" in same and "intra-op" not in same


def test_sigkill_then_rerun_equals_uninterrupted(data, reference_run, tmp_path):
    _, reference, window = reference_run
    outdir = tmp_path / "killed"
    output = kill_then_rerun(_command(data, outdir), outdir, window, round(KIMG * 1000))
    assert f"at {MIDDLE / 1000:g} kimg" in output and "resuming" in output, output[-4000:]
    assert_identical(reference, _final_state(outdir))


def test_full_disk_is_reported_and_rerun_continues_exactly(data, reference, tmp_path, monkeypatch):
    """A disk fills up after two checkpoints (each is 4 writes: 3 files and the pointer), so the last one fails."""
    real_write, writes = store.write_file, []

    def write_file(path, data):
        writes.append(path)
        if len(writes) > 8:
            real_write(path, data[: len(data) // 2])
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real_write(path, data)

    with monkeypatch.context() as patch:
        patch.setattr(store, "write_file", write_file)
        output = _run_here(data, tmp_path, expect=2)
    assert "error: checkpoint" in output and "ckpt-000000136: writing failed" in output, output[-4000:]
    assert "No space left on device" in output and "Traceback" not in output
    run = run_dir(tmp_path)
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["ckpt-000000000", "ckpt-000000104", "latest"]
    assert checkpoint.load_latest(run / "checkpoints")["loop"]["cur_nimg"] == MIDDLE
    _run_here(data, tmp_path)
    assert_identical(reference, _final_state(tmp_path))


def test_changed_training_maths_starts_a_new_run_and_is_refused_in_place(data, reference_run):
    """The same command with other maths does not continue the run (it would start the next one, naming what differs
    and how to continue it instead); continuing that run by name is refused, listing the fields."""
    outdir, changed = reference_run[0], ("--gamma", "0.5", "--glr", "0.001")
    run = run_dir(outdir)
    output = _run_here(data, outdir, extra=(*changed, "--dry-run"))
    assert f"would start {outdir / '00001-tiny-tiny-gpus1-batch8'}; {run} trained the same data and --cfg" in output
    assert "--gamma 0.05 (now 0.5), --glr 0.0025 (now 0.001)" in output, output[-2000:]
    assert f"pass --resume {run} --allow-config-change" in output
    output = _run_here(data, outdir, extra=(*changed, "--resume", str(run)), expect=2)
    assert "Traceback" not in output
    assert "loss.gamma" in output and "optim.g_lr" in output, output
    assert "--allow-config-change" in output
    assert run_dir(outdir) == run  # nothing made


def test_two_processes_continue_a_one_process_checkpoint(data, reference_run, tmp_path):
    """--resume CHECKPOINT with another process count (and so another accumulation): the same maths up to float
    rounding, so the end state is close to the uninterrupted one-process run's, though not bitwise."""
    source = run_dir(reference_run[0]) / "checkpoints" / f"ckpt-{MIDDLE:09d}"
    output = run_command(_command(data, tmp_path, nproc=2, extra=("--resume", str(source))))
    assert f"from {source} at {MIDDLE / 1000:g} kimg" in output, output[-4000:]
    assert run_dir(tmp_path).name.endswith("-gpus2-batch8")
    state, reference = _final_state(tmp_path), reference_run[1]
    for net in ("G", "D", "G_ema"):
        for name, value in reference[net].items():
            if not name.endswith("w_avg"):  # averaged over ranks per step vs. updated per micro-batch
                torch.testing.assert_close(state[net][name], value, rtol=1e-3, atol=1e-5, msg=f"{net}.{name}")
    assert state["augment"]["pipe"]["p"] == pytest.approx(reference["augment"]["pipe"]["p"].item())
