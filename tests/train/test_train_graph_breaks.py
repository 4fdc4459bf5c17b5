"""The regions `--compile` compiles are whole graphs: no graph break in any family's generator synthesis or
discriminator, as the main phases call them.

A graph break splits a compiled region into pieces with eager Python between them, which on a GPU costs a
host round trip and stops inductor fusing across it. `torch._dynamo.explain` traces a region (without inductor's code
generation) and lists its graphs and breaks. Here torch.compile is stood in for by a wrapper that explains each region
at its first call, with the arguments the phases really pass (StyleGAN3's magnitude_ema_beta, D's paired batches,
autocast), then runs it eagerly. The regions run with the reference ops: `--compile` refuses `--kernels triton`
(inductor makes its own Triton kernels), so reference is the one kernel choice a compiled region has on any device.

The default suite covers the three families at fp32; the benchmark-marked variants (bf16 autocast, the fp16 per-layer
recipe, gradient checkpointing with channels_last, self-attention) trace the same way and take longer:
`pytest -m benchmark tests/train/test_train_graph_breaks.py`. Progressive growing is not among them: `--compile`
refuses `--grow`.
"""

import dataclasses

import pytest
import torch
from train_helpers import make_dataset, tiny_options

from ganforge.train import precision as precision_module
from ganforge.train import resolve
from ganforge.train.build import build
from ganforge.train.phases import micro_batches, run_phase
from ganforge.train.schedules import plan_step

BATCH, RES = 4, 16


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("graph_breaks") / "squares", count=8, res=RES)


def _explained_regions(data, outdir, monkeypatch, **options) -> dict[str, object]:
    """The main phases of one step with every compiled region explained at its first call -> {region: explanation}."""
    cfg = resolve(tiny_options(data, outdir, kimg=BATCH / 1000, batch=BATCH, compile="default", **options))
    return _explain_step(cfg, monkeypatch)


def _explain_step(cfg, monkeypatch) -> dict[str, object]:
    explained, names = {}, iter(["G", "D"])  # build() compiles G's synthesis, then D

    def explaining(forward, mode):
        name = next(names)

        def call(*args, **kwargs):
            if name not in explained:
                torch._dynamo.reset()
                explained[name] = torch._dynamo.explain(forward)(*args, **kwargs)
            return forward(*args, **kwargs)

        return call

    monkeypatch.setattr(precision_module.torch, "compile", explaining)
    trainer, phases, _ = build(cfg, torch.device("cpu"))
    images = torch.rand([BATCH, 1, RES, RES], generator=torch.Generator().manual_seed(0)) * 2 - 1
    plan = plan_step(cfg, 0, phases)
    for index, phase in enumerate(phases):
        if phase.name.endswith("_main"):
            mbs = micro_batches(cfg, plan, index, images, torch.zeros([BATCH, 0]), trainer.G.num_ws)
            run_phase(trainer, phase, index, plan, mbs)
    torch._dynamo.reset()
    return explained


def _assert_whole(explained: dict) -> None:
    assert sorted(explained) == ["D", "G"], sorted(explained)
    for name, explanation in explained.items():
        reasons = [str(r.reason)[:300] for r in explanation.break_reasons]
        assert explanation.graph_break_count == 0 and explanation.graph_count == 1, (name, reasons)


@pytest.mark.parametrize("preset", ["tiny", "tiny3", "tiny-r3gan"])
def test_train_compiled_regions_have_no_graph_breaks(data, tmp_path, monkeypatch, preset):
    _assert_whole(_explained_regions(data, tmp_path, monkeypatch, preset=preset))


VARIANTS = {
    "bf16": dict(preset="tiny", precision="bf16"),
    "checkpointed-channels-last": dict(preset="tiny", grad_checkpoint=True, channels_last=True),
    "attention": dict(preset="tiny", g_attn="8", d_attn="8"),
    "r3gan-bf16": dict(preset="tiny-r3gan", precision="bf16"),
}


@pytest.mark.benchmark
@pytest.mark.parametrize("variant", VARIANTS)
def test_train_compiled_variants_have_no_graph_breaks(data, tmp_path, monkeypatch, variant):
    _assert_whole(_explained_regions(data, tmp_path, monkeypatch, **VARIANTS[variant]))


@pytest.mark.benchmark
@pytest.mark.parametrize("preset", ["tiny", "tiny3"])
def test_train_compiled_fp16_recipe_has_no_graph_breaks(data, tmp_path, monkeypatch, preset):
    """The per-layer fp16 recipe (float16 top blocks, clamped), traced on the CPU: resolve refuses fp16 there, so
    the Config is made fp16 after resolving; explain traces with fake tensors and runs no float16 kernel."""
    cfg = resolve(tiny_options(data, tmp_path, kimg=BATCH / 1000, batch=BATCH, compile="default", preset=preset))
    precision = dataclasses.replace(cfg.precision, mode="fp16", fp16_res=2)
    _assert_whole(_explain_step(dataclasses.replace(cfg, precision=precision), monkeypatch))
