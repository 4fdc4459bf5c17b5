"""Two gloo processes under torchrun train exactly like one process with the same global batch and micro-batch, with
D's first layers frozen (--freeze-d 2: the gradient sync leaves them out, so they stay bitwise on every rank)."""

import os
import subprocess
import sys

import pytest
import torch
from click.testing import CliRunner
from train_helpers import make_dataset, tiny_args

from ganforge import checkpoint
from ganforge.cli import main


@pytest.mark.timeout(300)
def test_train_two_process_gloo_equals_one_process(tmp_path):
    data = make_dataset(tmp_path / "squares")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    one = tiny_args(data, tmp_path / "one", kimg=0.032, batch_gpu=4, freeze_d=2)
    two = tiny_args(data, tmp_path / "two", kimg=0.032, freeze_d=2)
    result = CliRunner().invoke(main, one)  # the reference needs no process of its own
    assert result.exit_code == 0, result.output
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    proc = subprocess.run([*launcher, "-m", "ganforge", *two], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]

    (run_one,) = (tmp_path / "one").iterdir()
    (run_two,) = (tmp_path / "two").iterdir()
    assert run_two.name.endswith("-gpus2-batch8")
    log = (run_two / "log.txt").read_text()
    assert log.count("done: 0.032 kimg") == 1  # only rank 0 writes
    a = checkpoint.load_latest(run_one / "checkpoints")
    b = checkpoint.load_latest(run_two / "checkpoints")
    assert a["loop"]["cur_nimg"] == b["loop"]["cur_nimg"] == 32
    for net in ("G", "D", "G_ema"):
        for name, value in a[net].items():
            if name.endswith("w_avg"):  # averaged over ranks per step vs. updated per micro-batch: differs slightly
                continue
            torch.testing.assert_close(b[net][name], value, rtol=1e-4, atol=1e-6, msg=f"{net}.{name}")
    torch.testing.assert_close(b["loop"]["pl_mean"], a["loop"]["pl_mean"])
    initial = checkpoint.load(run_one / "checkpoints" / "ckpt-000000000")
    assert not torch.equal(initial["D"]["b4.out.weight"], a["D"]["b4.out.weight"])
    for frozen in ("b8.fromrgb.weight", "b8.fromrgb.bias", "b8.conv0.weight", "b8.conv0.bias"):
        assert torch.equal(a["D"][frozen], initial["D"][frozen]) and torch.equal(b["D"][frozen], initial["D"][frozen])
