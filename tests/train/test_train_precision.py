import pytest
import torch
from train_helpers import make_dataset, tiny_options

from ganforge.train import configure, loop, run
from ganforge.train.precision import Precision, fp32_math, kernel_policy


def _flags():
    return torch.backends.cuda.matmul.fp32_precision, torch.backends.cudnn.conv.fp32_precision


@pytest.mark.parametrize("tf32, expected", [(True, "tf32"), (False, "ieee")])
def test_fp32_math_sets_both_backends_and_restores_the_callers_flags(tf32, expected):
    before = _flags()
    with fp32_math(tf32=tf32):
        assert _flags() == (expected, expected)
    assert _flags() == before


def test_fp32_math_restores_flags_when_the_block_raises():
    before = _flags()
    with pytest.raises(RuntimeError), fp32_math(tf32=True):
        raise RuntimeError("boom")
    assert _flags() == before


@pytest.mark.parametrize("mode, expected", [("tf32", "tf32"), ("fp32", "ieee"), ("bf16", "ieee")])
def test_only_the_tf32_mode_allows_tf32(mode, expected):
    with Precision(mode, torch.device("cpu")).matmul_policy():
        assert _flags() == (expected, expected)


def _kernel_flags():
    return torch.backends.cudnn.benchmark, torch.are_deterministic_algorithms_enabled()


@pytest.mark.parametrize("deterministic, expected", [(False, (True, False)), (True, (False, True))])
def test_cudnn_autotunes_unless_deterministic_and_the_callers_flags_come_back(deterministic, expected):
    before = _kernel_flags()
    with pytest.raises(RuntimeError), kernel_policy(deterministic):
        assert _kernel_flags() == expected
        raise RuntimeError("the run failed")
    assert _kernel_flags() == before


def test_a_training_run_autotunes_unless_deterministic(tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(loop, "training_loop", lambda *args: seen.append(_kernel_flags()) or 0)
    data = make_dataset(tmp_path / "squares")
    for deterministic in (False, True):
        assert run(configure(tiny_options(data, tmp_path / str(deterministic), deterministic=deterministic))) == 0
    assert seen == [(True, False), (False, True)]
