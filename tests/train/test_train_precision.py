import contextlib

import pytest
import torch
from train_helpers import make_dataset, tiny_options

from ganforge.numerics import fp32_math
from ganforge.train import command, resolve, run
from ganforge.train import precision as precision_module
from ganforge.train.precision import Precision, kernel_policy


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
    monkeypatch.setattr(command, "training_loop", lambda *args: seen.append(_kernel_flags()) or 0)
    data = make_dataset(tmp_path / "squares")
    for deterministic in (False, True):
        assert run(resolve(tiny_options(data, tmp_path / str(deterministic), deterministic=deterministic))) == 0
    assert seen == [(True, False), (False, True)]


def test_one_precision_object_owns_the_runs_numeric_switches(monkeypatch):
    """Its policy() holds the matmul policy and the kernel policy for the whole run; it also gives the memory format
    and compiles the main-phase forwards. torch's deterministic switch and torch.compile take seconds the first time,
    so both are stood in for here (their own behaviour is torch's)."""
    entered = []

    @contextlib.contextmanager
    def deterministic(enabled):
        entered.append(enabled)
        yield

    monkeypatch.setattr(precision_module, "kernel_policy", deterministic)
    monkeypatch.setattr(torch, "compile", lambda forward: ("compiled", forward))
    cpu, before = torch.device("cpu"), _flags()
    plain, tuned = Precision("fp32", cpu), Precision("tf32", cpu, deterministic=True, channels_last=True, compile=True)
    with tuned.policy():
        assert _flags() == ("tf32", "tf32") and entered == [True]
    assert _flags() == before
    assert plain.memory_format == torch.contiguous_format and tuned.memory_format == torch.channels_last
    forward = torch.nn.Linear(2, 2)
    assert plain.compiled(forward) is forward and tuned.compiled(forward) == ("compiled", forward)
