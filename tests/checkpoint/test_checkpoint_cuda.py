"""CUDA generator states go into a checkpoint and come back. Needs a GPU (the `cuda` marker)."""

import pytest
import torch

from ganforge import checkpoint
from ganforge.checkpoint import capture_rng, restore_rng

pytestmark = pytest.mark.cuda


def test_cuda_rng_states_survive_a_checkpoint(tmp_path):
    torch.cuda.manual_seed_all(11)
    torch.randn(3, device="cuda")  # move the CUDA stream off its seed
    saved = checkpoint.save(tmp_path, {"rng": capture_rng()}, tag="1", retention=checkpoint.Retention(keep_last=1))
    expected = [torch.randn(5, device=f"cuda:{i}") for i in range(torch.cuda.device_count())]
    torch.cuda.manual_seed_all(12)
    restore_rng(checkpoint.load(saved, check_state=False)["rng"])
    again = [torch.randn(5, device=f"cuda:{i}") for i in range(torch.cuda.device_count())]
    assert len(checkpoint.load(saved, check_state=False)["rng"]["cuda"]) == torch.cuda.device_count()
    for a, b in zip(expected, again, strict=True):
        assert torch.equal(a, b)
