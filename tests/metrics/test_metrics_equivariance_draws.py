"""The transforms EQ-T and EQ-R draw per path (StyleGAN3, App. E): EQ-R's angle uniform over the whole circle, EQ-T's
translation uniform up to an eighth of the image per axis, each axis its own draw, EQ-T_int's rounded to whole pixels.
Read from the operators `draw` returns, over many positions; no network. And the masks of the translations: the
pixels whose sources lie inside the image; the PSNR they are reported as; the classes a conditional generator is
given."""

import math
from types import SimpleNamespace

import torch

from ganforge.metrics.equivariance import (
    LANCZOS_A,
    TRANSLATE_MAX,
    _labels,
    draw,
    psnr,
    translate_fractional,
    translate_integer,
)

POSITIONS, RESOLUTION = 4000, 16


def _quarters(values: torch.Tensor, low: float, high: float) -> list[float]:
    """The share of `values` in each quarter of [low, high]."""
    edges = torch.linspace(low, high, 5, dtype=torch.float64)
    return [((values >= a) & (values < b)).double().mean().item() for a, b in zip(edges[:-1], edges[1:], strict=True)]


def test_eq_r_draws_angles_uniform_over_the_whole_circle():
    angles = torch.tensor([draw("eqr", 7, p, RESOLUTION)[1].keywords["angle"] for p in range(POSITIONS)])
    assert angles.min() >= -math.pi and angles.max() < math.pi
    assert angles.min() < -0.98 * math.pi and angles.max() > 0.98 * math.pi
    assert all(abs(share - 0.25) < 0.03 for share in _quarters(angles, -math.pi, math.pi))


def test_eq_t_draws_each_axis_uniform_up_to_an_eighth_and_eq_t_int_whole_pixels():
    ops = [draw("eqt_frac", 7, p, RESOLUTION)[1].keywords for p in range(POSITIONS)]
    tx, ty = (torch.tensor([op[axis] for op in ops], dtype=torch.float64) for axis in ("tx", "ty"))
    for t in (tx, ty):
        assert t.abs().max() <= TRANSLATE_MAX == 0.125 and t.min() < -0.12 and t.max() > 0.12
        assert all(abs(share - 0.25) < 0.03 for share in _quarters(t, -TRANSLATE_MAX, TRANSLATE_MAX))
    assert abs(torch.corrcoef(torch.stack([tx, ty]))[0, 1]) < 0.05  # two draws, not one for both axes
    whole = [draw("eqt_int", 7, p, RESOLUTION)[1].keywords for p in range(200)]
    pixels = torch.tensor([[op["tx"], op["ty"]] for op in whole], dtype=torch.float64) * RESOLUTION
    assert torch.equal(pixels, pixels.round()) and pixels.abs().max() == RESOLUTION * TRANSLATE_MAX


def test_translation_masks_keep_exactly_the_pixels_whose_sources_lie_inside():
    """Integer shifts: output (r, c) comes from (r - iy, c - ix); fractional shifts by t = i + f: output n reads the
    2a Lanczos taps n - i - a .. n - i + a - 1. Both signs, zero, and non-square images, against loops."""
    h, w = 12, 16
    image = torch.rand(1, 1, h, w, generator=torch.Generator().manual_seed(3))
    for ix, iy in ((3, -2), (-4, 1), (0, 2), (-1, 0)):
        _, mask = translate_integer(image, ix / w, iy / h)
        expected = [[float(0 <= r - iy < h and 0 <= c - ix < w) for c in range(w)] for r in range(h)]
        assert mask[0, 0].tolist() == expected, (ix, iy)

    def inside(n: int, i: int, size: int) -> bool:
        return all(0 <= k < size for k in range(n - i - LANCZOS_A, n - i + LANCZOS_A))

    for tx, ty in ((1.3, -0.6), (-2.7, 0.4), (0.25, 1.5), (-4.5, 2.6), (2.6, -4.5)):
        _, mask = translate_fractional(image, tx / w, ty / h)
        ix, iy = math.floor(tx), math.floor(ty)
        expected = [[float(inside(r, iy, h) and inside(c, ix, w)) for c in range(w)] for r in range(h)]
        assert mask[0, 0].tolist() == expected, (tx, ty)


def test_psnr_is_the_peak_to_peak_two_over_the_mean_squared_error_in_decibels():
    assert psnr(0.0, 5.0) == math.inf
    assert psnr(1.0, 4.0) == 20 * math.log10(2) - 10 * math.log10(1 / 4)  # 12.04 dB
    assert abs(psnr(0.02, 10.0) - 10 * math.log10(4 / 0.002)) < 1e-12  # 33.01 dB


def test_a_conditional_generator_gets_one_hot_classes_drawn_per_position():
    for c_dim in (1, 3):
        labels = _labels(SimpleNamespace(c_dim=c_dim), list(range(40)), seed=5)
        assert labels.shape == (40, c_dim) and torch.equal(labels.sum(1), torch.ones(40))
        assert set(labels.argmax(1).tolist()) == set(range(c_dim)) and set(labels.flatten().tolist()) <= {0.0, 1.0}
    assert _labels(SimpleNamespace(c_dim=0), [0, 1], seed=5).shape == (2, 0)
