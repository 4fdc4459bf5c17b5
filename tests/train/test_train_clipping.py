"""Gradient clipping on one optimiser step: the global norm is capped after unscaling, the pre-clip norm and the
clipped flag are reported, and a norm under the threshold leaves the gradient bitwise alone."""

import pytest
import torch
from train_helpers import make_dataset, tiny_options

from ganforge.train import resolve
from ganforge.train.build import build
from ganforge.train.phases import _finish_step


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("train_clipping") / "squares")


def _d_phase(data, tmp_path, scale: float | None = None, **extra):
    """The D main phase of fresh tiny networks; with `scale`, its scaler is an enabled GradScaler at that scale, as
    under fp16 (GradScaler works on CPU tensors too)."""
    t, phases, _ = build(resolve(tiny_options(data, tmp_path, **extra)), torch.device("cpu"))
    phase = next(p for p in phases if p.name == "D_main")
    if scale is not None:
        phase.network.scaler = torch.amp.GradScaler("cpu", init_scale=scale)
        phase.network.scaler.scale(torch.zeros([]))  # the scaler creates its scale at the first loss it scales
    return t, phase


def _step_with_gradient(t, phase, gradients: list[torch.Tensor]) -> tuple[dict, list[torch.Tensor]]:
    """Set the (scaled) gradients, finish the step; -> (stats, the gradients the optimiser stepped with)."""
    params = list(phase.network.module.parameters())
    for p, g in zip(params, gradients, strict=True):
        p.grad = g.clone()
    seen = []
    step = phase.network.opt.step
    phase.network.opt.step = lambda *a, **k: seen.extend(p.grad.clone() for p in params) or step(*a, **k)
    return _finish_step(t, phase, {}, torch.zeros([])), seen


def _norm(tensors) -> float:
    return torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(x) for x in tensors])).item()


def _gradients(phase, seed: int = 0) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(p.shape, generator=gen) for p in phase.network.module.parameters()]


@pytest.mark.parametrize("scale", [None, 1024.0])
def test_clipping_caps_the_unscaled_norm_and_reports_the_norm_before(data, tmp_path, scale):
    t, phase = _d_phase(data, tmp_path, scale, clip_grad_d=0.5)
    true = _gradients(phase)
    stats, seen = _step_with_gradient(t, phase, [g * (scale or 1) for g in true])
    assert stats["GradNorm/D_main"].item() == pytest.approx(_norm(true), rel=1e-5)
    assert stats["Clipped/D_main"].item() == 1
    assert _norm(seen) == pytest.approx(0.5, rel=1e-5)
    ratio = 0.5 / _norm(true)  # the direction is kept: every gradient scaled by the same factor
    for g, s in zip(true, seen, strict=True):
        torch.testing.assert_close(s, g * ratio, rtol=1e-5, atol=1e-8)


def test_a_norm_below_the_threshold_is_left_alone(data, tmp_path):
    t, phase = _d_phase(data, tmp_path, clip_grad_d=1e6)
    true = _gradients(phase)
    stats, seen = _step_with_gradient(t, phase, true)
    assert stats["Clipped/D_main"].item() == 0
    assert all(torch.equal(s, g) for s, g in zip(seen, true, strict=True))


def test_clipping_is_per_network(data, tmp_path):
    t, phase = _d_phase(data, tmp_path, clip_grad_g=0.5)
    stats, seen = _step_with_gradient(t, phase, _gradients(phase))
    assert "Clipped/D_main" not in stats and _norm(seen) > 1
