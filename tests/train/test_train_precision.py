import contextlib

import pytest
import torch

from ganforge.numerics import fp32_math
from ganforge.train import precision as precision_module
from ganforge.train.precision import Precision


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


def test_one_precision_object_owns_the_runs_numeric_switches(monkeypatch):
    """Its policy() holds the matmul policy and deterministic mode for the whole run; it also gives the memory format
    and compiles the main-phase forwards. torch's deterministic switch and torch.compile take seconds the first time,
    so both are stood in for here (their own behaviour is torch's)."""
    entered = []

    @contextlib.contextmanager
    def deterministic(enabled):
        entered.append(enabled)
        yield

    monkeypatch.setattr(precision_module, "deterministic_mode", deterministic)
    monkeypatch.setattr(torch, "compile", lambda forward: ("compiled", forward))
    cpu, before = torch.device("cpu"), _flags()
    plain, tuned = Precision("fp32", cpu), Precision("tf32", cpu, deterministic=True, channels_last=True, compile=True)
    with tuned.policy():
        assert _flags() == ("tf32", "tf32") and entered == [True]
    assert _flags() == before
    assert plain.memory_format == torch.contiguous_format and tuned.memory_format == torch.channels_last
    forward = torch.nn.Linear(2, 2)
    assert plain.compiled(forward) is forward and tuned.compiled(forward) == ("compiled", forward)
