"""--device: one choice, one error where the GPU asked for is not there."""

import subprocess
import sys

import pytest
import torch

from ganforge.devices import pick_device
from ganforge.errors import UserError


def test_auto_and_cpu_pick_the_cpu_without_a_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert pick_device("auto") == pick_device("cpu") == torch.device("cpu")


def test_auto_and_cuda_pick_the_given_gpu_when_there_is_one(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert pick_device("auto", 3) == pick_device("cuda", 3) == torch.device("cuda", 3)
    assert pick_device("cpu", 3) == torch.device("cpu")


def test_cuda_without_a_gpu_names_the_flag_and_the_way_out(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(UserError, match=r"^--device cuda: .*pass --device cpu"):
        pick_device("cuda")


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine where torch sees no GPU")
@pytest.mark.parametrize("command", [
    ["train", "--data", "missing-but-not-read-yet.zip", "--outdir", "runs", "--cfg", "tiny"],
    ["generate", "--network", "missing-but-not-read-yet.safetensors", "--outdir", "out", "--seeds", "0"],
])  # fmt: skip
def test_commands_refuse_device_cuda_on_a_cpu_machine_in_one_line(tmp_path, command):
    done = subprocess.run([sys.executable, "-m", "ganforge", *command, "--device", "cuda"], cwd=tmp_path,
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: --device cuda:") and "Traceback" not in done.stderr, done.stderr
    assert list(tmp_path.iterdir()) == []
