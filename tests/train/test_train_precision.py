import contextlib

import pytest
import torch
from train_helpers import make_dataset, tiny_options

from ganforge.devices import COMPILE_MODES
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
    monkeypatch.setattr(torch, "compile", lambda forward, mode: ("compiled", forward))
    cpu, before = torch.device("cpu"), _flags()
    plain = Precision("fp32", cpu)
    tuned = Precision("tf32", cpu, deterministic=True, channels_last=True, compile="default")
    with tuned.policy():
        assert _flags() == ("tf32", "tf32") and entered == [True]
    assert _flags() == before
    assert plain.memory_format == torch.contiguous_format and tuned.memory_format == torch.channels_last
    forward = torch.nn.Linear(2, 2)
    assert plain.compiled(forward) is forward and tuned.compiled(forward) == ("compiled", forward)


def test_the_compile_mode_reaches_torch_compile_and_only_cuda_replays_cuda_graphs(monkeypatch):
    """off leaves the forward as it is; every other mode is torch.compile's. max-autotune and reduce-overhead replay
    CUDA graphs on CUDA only: there the compiled forward hands out a copy of its output, which the next replay leaves
    alone, and each micro-batch starts a new round of replays (torch's own functions stood in for)."""
    modes, marks = [], []
    monkeypatch.setattr(torch, "compile", lambda forward, mode: modes.append(mode) or forward)
    monkeypatch.setattr(torch.compiler, "cudagraph_mark_step_begin", lambda: marks.append("mark"))
    cpu, cuda, x = torch.device("cpu"), torch.device("cuda"), torch.ones(3)
    forward = torch.nn.Identity()
    assert [Precision("fp32", cpu, compile=mode).compiled(forward) is forward for mode in COMPILE_MODES] == [True] * 4
    assert modes == ["default", "max-autotune", "reduce-overhead"]
    graphs = {mode: Precision("fp32", cuda, compile=mode).cuda_graphs for mode in COMPILE_MODES}
    assert graphs == {"off": False, "default": False, "max-autotune": True, "reduce-overhead": True}
    assert not any(Precision("fp32", cpu, compile=mode).cuda_graphs for mode in COMPILE_MODES)
    replayed = Precision("fp32", cuda, compile="reduce-overhead")
    out = replayed.compiled(forward)(x)
    assert torch.equal(out, x) and out.data_ptr() != x.data_ptr()
    Precision("fp32", cpu, compile="max-autotune").start_micro_batch()
    replayed.start_micro_batch()
    assert marks == ["mark"]


def test_under_cuda_graphs_a_phase_accumulates_into_zeroed_gradients_of_its_own():
    """The compiled backward's gradients live in the graphs' pool; a gradient that is None would take that memory
    as it is, and the next micro-batch's replay would overwrite it before it is added to."""
    params = [torch.nn.Parameter(torch.ones(2, 3)), torch.nn.Parameter(torch.ones(4))]
    for device, expected in (("cpu", [None, None]), ("cuda", [torch.zeros(2, 3), torch.zeros(4)])):
        for p in params:
            p.grad = torch.full_like(p, 7.0)
        Precision("fp32", torch.device(device), compile="reduce-overhead").clear_gradients(params)
        assert [p.grad if p.grad is None else p.grad.tolist() for p in params] == [
            e if e is None else e.tolist() for e in expected
        ]
