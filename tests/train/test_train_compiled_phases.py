"""Training's side of `--compile`, checked on the CPU without inductor's code generation (which takes minutes there:
tests/train/test_train_compile_cpu.py, `pytest -m benchmark`; on a GPU tests/train/test_train_cuda.py).

torch.compile is stood in for by its `aot_eager` backend: the graphs AOTAutograd captures, forward and backward, run
by PyTorch's own kernels, so the values are eager's. With it, the phases of every generator family train: only the
main phases' forwards are compiled, since R1, R2 and path length differentiate gradients, which compiled graphs do
not support.

Under CUDA graphs (`--compile max-autotune|reduce-overhead` on CUDA) the next replay of a graph overwrites the memory
of the last one's outputs. The stand-in does that too (it overwrites the previous call's output with NaN), and the run
is told it replays CUDA graphs, as on CUDA: steps with two micro-batches each (the statistics of the first are kept
while the second runs), lazy R1 and path length at step 0, must give bitwise the weights, optimiser state and
statistics of eager steps.
"""

import dataclasses

import pytest
import torch
from train_helpers import make_dataset, tiny_options

from ganforge.train import resolve
from ganforge.train.build import build
from ganforge.train.phases import micro_batches, run_phase
from ganforge.train.precision import Precision
from ganforge.train.schedules import plan_step

BATCH, BATCH_GPU, STEPS = 8, 4, 3


COMPILE = torch.compile


@pytest.fixture(autouse=True)
def fresh_dynamo():
    """Each test compiles new networks: none inherits another's compiled code or its recompilation count."""
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _traced(forward, mode):
    """torch.compile(forward, mode=mode) without inductor: AOTAutograd's graphs run by PyTorch's kernels."""
    return COMPILE(forward, backend="aot_eager")


def _replaying(forward, mode):
    """torch.compile(forward, mode=mode) under CUDA graphs, as far as what a caller sees: a call overwrites the last
    call's output (the forward runs eagerly, so that the test compiles nothing)."""
    last = []

    def replay(*args, **kwargs):
        for out in last:
            out.detach().fill_(float("nan"))
        last[:] = [forward(*args, **kwargs)]
        return last[0]

    return replay


def _train(data, outdir, compile_mode, preset="tiny", steps=STEPS, batch_gpu=BATCH_GPU):
    """`steps` steps of a tiny preset's networks (narrowed) -> (the Trainer, every phase's stats in order)."""
    cfg = resolve(tiny_options(data, outdir, kimg=steps * BATCH / 1000, batch=BATCH, batch_gpu=batch_gpu,
                               compile=compile_mode, preset=preset))  # fmt: skip
    narrow = {} if preset == "tiny-r3gan" else {"z_dim": 8, "w_dim": 8, "channel_base": 32, "channel_max": 8}
    cfg = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, **narrow))
    trainer, phases, _ = build(cfg, torch.device("cpu"))
    images = torch.rand([steps, BATCH, 1, 8, 8], generator=torch.Generator().manual_seed(5)) * 2 - 1
    stats = []
    for step in range(steps):
        plan = plan_step(cfg, step * BATCH, phases)
        for index, (phase, due) in enumerate(zip(phases, plan.due, strict=True)):
            if due:
                mbs = micro_batches(cfg, plan, index, images[step], torch.zeros([BATCH, 0]), trainer.G.num_ws)
                stats.append((phase.name, run_phase(trainer, phase, index, plan, mbs)))
    return trainer, stats


def _assert_same_steps(actual, actual_stats, expected, expected_stats) -> None:
    """The same phases with bitwise the same statistics, weights and Adam state."""
    assert [name for name, _ in actual_stats] == [name for name, _ in expected_stats]
    for (name, values), (_, reference) in zip(actual_stats, expected_stats, strict=True):
        assert values.keys() == reference.keys(), name
        for key, value in reference.items():
            assert torch.equal(values[key], value), (name, key)
    for name, network in actual.networks.items():
        reference = expected.networks[name]
        for (key, value), expected_value in zip(network.module.state_dict().items(),
                                                reference.module.state_dict().values(), strict=True):  # fmt: skip
            assert torch.equal(value, expected_value), (name, key)
        for index, state in reference.opt.state_dict()["state"].items():
            for key, value in state.items():
                assert torch.equal(network.opt.state_dict()["state"][index][key], value), (name, index, key)


@pytest.mark.parametrize("preset, phases", [("tiny", ["G_main", "G_reg", "D_main", "D_reg"]),
                                            ("tiny-r3gan", ["D_main", "G_main"])])  # fmt: skip
def test_compiled_main_forwards_train_every_phase_as_eager_does(tmp_path, monkeypatch, preset, phases):
    """One step of every phase (StyleGAN2: lazy R1 and path length are due at step 0; R3GAN: R1 and R2 in its D
    phase, which runs D eagerly while its G phase runs the compiled D)."""
    data = make_dataset(tmp_path / "squares")
    eager = _train(data, tmp_path / "eager", None, preset, steps=1, batch_gpu=BATCH)
    monkeypatch.setattr(torch, "compile", _traced)
    compiled = _train(data, tmp_path / "compiled", "default", preset, steps=1, batch_gpu=BATCH)
    assert [name for name, _ in compiled[1]] == phases
    _assert_same_steps(*compiled, *eager)


def test_cuda_graph_steps_with_accumulation_and_lazy_regularisation_equal_eager_steps(tmp_path, monkeypatch):
    data = make_dataset(tmp_path / "squares")
    eager, eager_stats = _train(data, tmp_path / "eager", None)
    marks = []
    monkeypatch.setattr(torch, "compile", _replaying)
    monkeypatch.setattr(torch.compiler, "cudagraph_mark_step_begin", lambda: marks.append(1))
    monkeypatch.setattr(Precision, "cuda_graphs", property(lambda self: self.compiling))  # as on a CUDA device
    graphs, graph_stats = _train(data, tmp_path / "graphs", "max-autotune")
    phases = [name for name, _ in graph_stats]
    assert phases == ["G_main", "G_reg", "D_main", "D_reg"] + ["G_main", "D_main"] * (STEPS - 1)
    assert len(marks) == 2 * len(phases)  # a new round of replays before each of the two micro-batches
    _assert_same_steps(graphs, graph_stats, eager, eager_stats)


def test_without_the_copies_the_replays_would_overwrite_the_kept_statistics(tmp_path, monkeypatch):
    """The stand-in really overwrites: compiled forwards that handed out the replay's own output would leave NaN in
    the statistics of the phase's first micro-batch."""
    data = make_dataset(tmp_path / "squares")
    monkeypatch.setattr(torch, "compile", _replaying)
    monkeypatch.setattr(Precision, "cuda_graphs", property(lambda self: False))  # compiled, but no copies
    _, stats = _train(data, tmp_path / "plain", "max-autotune")
    assert torch.isnan(dict(stats)["G_main"]["Scores/fake"][:BATCH_GPU]).all()
