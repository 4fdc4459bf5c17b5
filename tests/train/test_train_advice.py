"""Errors about options name the option the user passed and a fix that works: batch sizes blame --batch or
--batch-gpu (whichever was given) and suggest a value that resolves; a checkpoint whose networks have another shape
is refused without suggesting --allow-config-change, which could not load it."""

import dataclasses
import shutil
from pathlib import Path

import pytest
from train_helpers import make_dataset

from ganforge import outputs
from ganforge.config import maths_fields
from ganforge.errors import UserError
from ganforge.train.checkpointing import check_config
from ganforge.train.options import TrainOptions
from ganforge.train.resolver import DatasetFacts, Facts, resolve


def _facts(world_size: int = 1, resolution: int = 16) -> Facts:
    return Facts(DatasetFacts(resolution=resolution, channels=3, label_dim=0, name="d"), world_size, "cpu")


def _options(tmp_path: Path, **given) -> TrainOptions:
    return TrainOptions(data=str(tmp_path / "d"), outdir=str(tmp_path / "runs"), preset="tiny", kimg=0.384, tick=0.384,
                        **given)  # fmt: skip


def _batch_problems(tmp_path: Path, world_size: int, **given) -> list[str]:
    try:
        resolve(_options(tmp_path, **given), _facts(world_size))
    except UserError as error:
        return [p for p in error.problems if "batch" in p.split(":")[0]]
    return []


def test_a_batch_that_splits_badly_blames_batch_not_an_unpassed_batch_gpu(tmp_path):
    (problem,) = _batch_problems(tmp_path, 1, batch=6)
    assert problem.startswith("--batch 6: each of the 1 process(es) would take 6 images"), problem
    assert "--batch-gpu" not in problem and problem.endswith("pass --batch 4")


def test_an_invalid_batch_gpu_is_blamed_itself_with_a_valid_value(tmp_path):
    (problem,) = _batch_problems(tmp_path, 1, batch=32, batch_gpu=5)
    assert problem == "--batch-gpu 5: must be even (path-length batches are half a micro-batch); pass --batch-gpu 4"
    assert "multiple of 5" not in problem


def test_a_batch_the_processes_cannot_share_names_the_process_count(tmp_path):
    (problem,) = _batch_problems(tmp_path, 3, batch=32)
    assert problem.startswith("--batch 32: not divisible by the 3 processes; pass --batch "), problem


@pytest.mark.parametrize("world_size", [1, 2, 3])
def test_every_suggested_batch_resolves(tmp_path, world_size):
    """Apply the advice of every batch error over a grid of choices: the result has no batch problem left."""
    for batch in range(1, 41):
        for batch_gpu in (None, *range(1, 11)):
            given = {"batch": batch} if batch_gpu is None else {"batch": batch, "batch_gpu": batch_gpu}
            problems = _batch_problems(tmp_path, world_size, **given)
            if not problems:
                continue
            (problem,) = problems
            words = problem.rsplit("; pass ", 1)[1].split(" ")
            advice = zip(words[::2], words[1::2], strict=True)
            fixed = given | {flag.removeprefix("--").replace("-", "_"): int(value) for flag, value in advice}
            assert _batch_problems(tmp_path, world_size, **fixed) == [], (given, problem)


def test_a_checkpoint_of_another_resolution_is_refused_without_allow_config_change_advice(tmp_path):
    trained = resolve(_options(tmp_path, batch=8), _facts(resolution=16))
    now = resolve(_options(tmp_path, batch=8, allow_config_change=True), _facts(resolution=32))
    with pytest.raises(UserError) as caught:
        check_config({"config": maths_fields(trained.to_dict())}, now, Path("ckpt-000000016"))
    text = "\n".join(caught.value.problems)
    assert "data.resolution: 16 -> 32 (set by --data (its resolution))" in text
    assert "--allow-config-change" not in text and "--resume new" in text


def test_a_changed_loss_weight_is_allowed_by_allow_config_change(tmp_path):
    trained = resolve(_options(tmp_path, batch=8), _facts())
    now = resolve(_options(tmp_path, batch=8, gamma=3.0), _facts())
    state = {"config": maths_fields(trained.to_dict())}
    with pytest.raises(UserError) as caught:
        check_config(state, now, Path("ckpt"))
    assert "--allow-config-change" in caught.value.problems[-1]
    allowed = dataclasses.replace(now, run=dataclasses.replace(now.run, allow_config_change=True))
    assert [line.split(":")[0] for line in check_config(state, allowed, Path("ckpt"))] == ["loss.gamma"]


def test_an_outdir_without_room_for_the_first_checkpoint_is_refused_before_work(tmp_path, monkeypatch):
    make_dataset(tmp_path / "d")
    full_disk = shutil.disk_usage(tmp_path)._replace(free=2**20)
    monkeypatch.setattr(outputs.shutil, "disk_usage", lambda path: full_disk)
    with pytest.raises(UserError) as caught:
        resolve(_options(tmp_path, batch=8))  # the facts observed: --data opened, --outdir's disk looked at
    (problem,) = caught.value.problems
    assert problem.startswith(f"--outdir {tmp_path / 'runs'}: 1 MiB free on its disk, but the first checkpoint")
    assert not (tmp_path / "runs").exists()
