"""The --resume choices and what may change on resume, through `ganforge.train` in-process on the CPU.

A module-level run of 3 steps (checkpoints at 0, 16 and 24 images) is copied for each test that continues it.
"""

import dataclasses
import json
import shutil

import pytest
import torch
from train_helpers import make_dataset, tiny_options

from ganforge import checkpoint
from ganforge.errors import UserError
from ganforge.train import resolve, run
from ganforge.train.command import main
from ganforge.train.options import TrainOptions

STEP = 0.008  # one batch of 8 images


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("resume_options") / "squares")


def _options(data, outdir, steps: int, **extra) -> TrainOptions:
    return tiny_options(data, outdir, kimg=steps * STEP, tick=2 * STEP, batch_gpu=8, **extra)


def _train(options) -> None:
    assert run(resolve(options)) == 0


def _runs(outdir):
    return sorted(p for p in outdir.iterdir() if p.is_dir())


@pytest.fixture(scope="module")
def three_steps(data, tmp_path_factory):
    """OUTDIR of a finished 3-step run, and its final state."""
    outdir = tmp_path_factory.mktemp("three_steps")
    _train(_options(data, outdir, 3))
    return outdir, checkpoint.load_latest(_runs(outdir)[0] / "checkpoints")


def _continue(three_steps, tmp_path):
    outdir = tmp_path / "runs"
    shutil.copytree(three_steps[0], outdir)
    return outdir


def _assert_states_equal(a: dict, b: dict) -> None:
    for net in ("G", "D", "G_ema"):
        for name, value in a[net].items():
            assert torch.equal(b[net][name], value), f"{net}.{name}"
    for opt in ("opt_G", "opt_D"):
        for index, moments in a[opt]["state"].items():
            for key, value in moments.items():
                assert torch.equal(b[opt]["state"][index][key], value), f"{opt}.{index}.{key}"


def test_resume_new_always_starts_a_run_from_scratch(data, three_steps, tmp_path):
    """Also when the newest run was itself started with --resume new (its config says so)."""
    outdir = _continue(three_steps, tmp_path)
    for _ in range(2):
        _train(_options(data, outdir, 1, resume="new"))
    runs = _runs(outdir)
    assert [run.name[:6] for run in runs] == ["00000-", "00001-", "00002-"]
    for run_dir in runs[1:]:
        assert sorted(p.name for p in (run_dir / "checkpoints").glob("ckpt-*")) == ["ckpt-000000000", "ckpt-000000008"]
        assert "starting at 0 kimg" in (run_dir / "log.txt").read_text()


def test_resume_from_a_checkpoint_folder_continues_it_exactly(data, three_steps, tmp_path):
    (source_run,) = _runs(three_steps[0])
    _train(_options(data, tmp_path, 3, resume=str(source_run / "checkpoints" / "ckpt-000000016")))
    (run_dir,) = _runs(tmp_path)
    assert sorted(p.name for p in (run_dir / "checkpoints").glob("ckpt-*")) == ["ckpt-000000024"]
    _assert_states_equal(three_steps[1], checkpoint.load_latest(run_dir / "checkpoints"))


def test_allow_config_change_continues_with_the_new_values(data, three_steps, tmp_path, capsys):
    outdir = _continue(three_steps, tmp_path)
    _train(_options(data, outdir, 4, gamma=0.5, dlr=0.001, allow_config_change=True))
    assert "loss.gamma: 0.05 -> 0.5" in capsys.readouterr().out
    (run_dir,) = _runs(outdir)
    state = checkpoint.load_latest(run_dir / "checkpoints")
    assert state["loop"]["cur_nimg"] == 32 and state["config"]["loss.gamma"] == 0.5
    (D_phase_lr,) = {group["lr"] for group in state["opt_D"]["param_groups"]}
    assert D_phase_lr == pytest.approx(0.001 * 16 / 17)  # the new --dlr, with the lazy-regularisation correction


def test_a_changed_batch_gpu_is_accepted_and_continues_the_run(data, three_steps, tmp_path):
    """Accumulating 2 x 4 images instead of one micro-batch of 8 is the same maths (the per-layer noise aside, which
    is drawn per micro-batch), so the run continues: same folder, one more Adam step on the checkpoint's, the new
    value recorded."""
    outdir = _continue(three_steps, tmp_path)
    _train(dataclasses.replace(_options(data, outdir, 4), batch_gpu=4))
    (run_dir,) = _runs(outdir)
    assert "resuming at 0.024 kimg" in (run_dir / "log.txt").read_text()
    state, before = checkpoint.load_latest(run_dir / "checkpoints"), three_steps[1]
    assert json.loads((run_dir / "config.json").read_text())["schedule"]["batch_gpu"] == 4
    assert state["loop"]["cur_nimg"] == 32
    for opt in ("opt_G", "opt_D"):
        steps = [s["step"].item() for s in state[opt]["state"].values()]
        assert steps == [s["step"].item() + 1 for s in before[opt]["state"].values()], opt


def test_resume_a_run_folder_continues_it_in_place(data, three_steps, tmp_path, capsys):
    """--resume RUNDIR: that run goes on in its own folder, whatever --outdir says and whatever else OUTDIR holds."""
    (run_dir,) = _runs(_continue(three_steps, tmp_path))
    elsewhere = tmp_path / "elsewhere"
    _train(_options(data, elsewhere, 4, resume=str(run_dir)))
    assert f"resuming {run_dir} from {run_dir / 'checkpoints' / 'ckpt-000000024'} at 0.024 kimg (the run --resume " \
           "names)" in capsys.readouterr().out  # fmt: skip
    assert checkpoint.load_latest(run_dir / "checkpoints")["loop"]["cur_nimg"] == 32
    assert not elsewhere.exists() or not list(elsewhere.iterdir())


def test_a_dry_run_makes_the_checks_of_the_run_it_describes(data, three_steps, capsys):
    """--dry-run refuses what the run would refuse (other maths; networks of another shape), says what
    --allow-config-change lets through, and writes nothing."""
    (run_dir,) = _runs(three_steps[0])
    before = sorted((p, p.stat().st_mtime_ns) for p in run_dir.rglob("*"))
    changed = _options(data, three_steps[0], 4, gamma=1.0, resume=str(run_dir), dry_run=True)
    with pytest.raises(UserError) as refused:
        main(changed)
    assert "loss.gamma: 0.05 -> 1.0" in refused.value.problems
    other_family = dataclasses.replace(changed, gamma=None, preset="tiny-r3gan")
    with pytest.raises(UserError, match="holds networks of another shape than these options make"):
        main(other_family)
    capsys.readouterr()
    assert main(dataclasses.replace(changed, allow_config_change=True)) == 0
    err = capsys.readouterr().err
    assert "config change allowed by --allow-config-change: loss.gamma: 0.05 -> 1.0" in err
    assert f"would continue {run_dir} from ckpt-000000024 at 0.024 kimg (the run --resume names)" in err
    assert sorted((p, p.stat().st_mtime_ns) for p in run_dir.rglob("*")) == before


def test_a_run_that_ends_off_a_tick_boundary_reports_the_next_tick(data, three_steps, tmp_path):
    """Ticks of 16 images: reports at 16 (tick 1), at the run's end, 24 (within tick 2, which it used to number 1
    again), then, continued to 40 images, at 32 (tick 2 completed) and 40 (within tick 3)."""
    outdir = _continue(three_steps, tmp_path)
    _train(_options(data, outdir, 5))
    (run_dir,) = _runs(outdir)
    lines = [json.loads(line) for line in (run_dir / "stats.jsonl").read_text().splitlines()]
    assert [(line["tick"], line["kimg"]) for line in lines] == [(1, 0.016), (2, 0.024), (2, 0.032), (3, 0.04)]
    assert checkpoint.load_latest(run_dir / "checkpoints")["loop"]["cur_tick"] == 3
