"""CUDA generator states go into a checkpoint and come back. Needs a GPU (the `cuda` marker)."""

import pytest
import torch

from ganforge import checkpoint
from ganforge.checkpoint import capture_rng, restore_rng
from ganforge.checkpoint.rng import check_rng
from ganforge.checkpoint.schema import Refused
from ganforge.checkpoint.store import FORMAT_VERSION

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


def _cuda_state(seed: int, offset: int, size: int = 16) -> torch.Tensor:
    return torch.tensor([seed, offset], dtype=torch.int64).view(torch.uint8)[:size].clone()


def test_the_cuda_state_rule_is_what_torchs_cuda_generator_accepts():
    """check_rng judges CUDA states without a GPU (so verify on a CPU machine agrees with a resume on a GPU one); here,
    with one, its verdict must be torch's own."""
    states = [torch.cuda.get_rng_state(), _cuda_state(5, 8), _cuda_state(5, 6), _cuda_state(5, -4),
              _cuda_state(5, 8, size=15), _cuda_state(1, 2**40)]  # fmt: skip
    base = capture_rng()
    for state in states:
        try:
            torch.cuda.set_rng_state(state)
            accepted = True
        except RuntimeError:
            accepted = False
        try:
            check_rng({**base, "cuda": [state]}, FORMAT_VERSION)
            judged = True
        except Refused:
            judged = False
        assert judged == accepted, (state.tolist(), accepted)
