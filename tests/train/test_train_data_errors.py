"""A bad sample met in the middle of a run: the progress is checkpointed first, then one error names the file and
how to find every other bad one; the rerun resumes from there."""

import pytest
from train_helpers import make_dataset, tiny_options

from ganforge import checkpoint
from ganforge.errors import UserError, carried_problems
from ganforge.train import logs, resolve, run


def test_a_bad_sample_mid_run_is_checkpointed_then_reported(tmp_path, monkeypatch):
    data = make_dataset(tmp_path / "data", count=32)
    options = tiny_options(data, tmp_path / "runs", kimg=0.064, snap=2)  # ticks every 16 images, checkpoints every 32
    real_tick = logs.RunLog.tick

    def tick_then_damage_the_data(self, cur_nimg, *args, **kwargs):
        real_tick(self, cur_nimg, *args, **kwargs)
        if cur_nimg == 16:  # between two checkpoints: the files change under the running job
            for png in data.glob("*.png"):
                png.write_bytes(b"not a PNG any more")

    monkeypatch.setattr(logs.RunLog, "tick", tick_then_damage_the_data)
    with pytest.raises(UserError) as caught:
        run(resolve(options))
    first, *_, advice = caught.value.problems
    assert first.startswith(f"--data: {data}/") and ".png" in first, caught.value.problems
    assert f"ganforge dataset verify {data}" in advice and "rerun the same command" in advice
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert sorted(p.name for p in (run_dir / "checkpoints").glob("ckpt-*")) == ["ckpt-000000000", "ckpt-000000016"]
    assert checkpoint.load_latest(run_dir / "checkpoints")["loop"]["cur_nimg"] == 16
    assert f"error: {first}" in (run_dir / "log.txt").read_text()


def test_a_worker_error_comes_back_as_the_problems_it_carried():
    wrapped = UserError(
        "Caught UserError in DataLoader worker process 1.\nOriginal Traceback (most recent call last):\n"
        '  File "x.py", line 3, in f\n    raise UserError(a, b)\nganforge.errors.UserError: --data: x.zip/a.png: bad\n'
        "second problem\n"
    )
    assert carried_problems(wrapped) == ["--data: x.zip/a.png: bad", "second problem"]
    plain = UserError("--data: x.zip/a.png: bad")
    assert carried_problems(plain) == plain.problems
