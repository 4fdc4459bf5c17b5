"""DiffAugment (Zhao et al. 2020, Sec. 3) and ADA's filter, noise and cutout groups: shapes, differentiability,
reproducibility from a seed, and each transform against what the papers describe."""

import itertools
import math

import pytest
import torch

from ganforge.augment import corrupt, diffaugment
from ganforge.augment.diffaugment import DiffAugment
from ganforge.augment.pipe import AugmentPipe


def _images(n=6, c=3, h=16, w=16, seed=0) -> torch.Tensor:
    return torch.rand([n, c, h, w], generator=torch.Generator().manual_seed(seed)) * 2 - 1


def _shift(image: torch.Tensor, dy: int, dx: int) -> torch.Tensor:
    """out[y, x] = image[y - dy, x - dx], zero outside: the slow reference."""
    out = torch.zeros_like(image)
    _, h, w = image.shape
    for y, x in itertools.product(range(h), range(w)):
        if 0 <= y - dy < h and 0 <= x - dx < w:
            out[:, y, x] = image[:, y - dy, x - dx]
    return out


def test_translation_is_a_zero_padded_shift_of_at_most_an_eighth():
    images = _images(n=8, h=16, w=16) + 2  # no zeros in the input, so padding is visible
    out = diffaugment.translation(images, torch.Generator().manual_seed(1))
    found = []
    for image, moved in zip(images, out, strict=True):
        shifts = [(dy, dx) for dy in range(-2, 3) for dx in range(-2, 3) if torch.equal(_shift(image, dy, dx), moved)]
        assert len(shifts) == 1
        found += shifts
    assert len(set(found)) > 1  # drawn per image


def test_cutout_zeroes_one_half_size_square_per_image():
    images = torch.ones([16, 1, 16, 16])
    out = diffaugment.cutout(images, torch.Generator().manual_seed(2))
    for image in out[:, 0]:
        rows, cols = (image == 0).any(dim=1).nonzero().flatten(), (image == 0).any(dim=0).nonzero().flatten()
        assert 4 <= len(rows) <= 8 and 4 <= len(cols) <= 8  # half of 16, cut by the border by at most half
        assert rows.diff().eq(1).all() and cols.diff().eq(1).all()
        square = image[rows[0] : rows[-1] + 1, cols[0] : cols[-1] + 1]
        assert (square == 0).all() and (image == 0).sum() == len(rows) * len(cols)
    assert (out == 0).float().mean() > 0.15  # squares mostly inside: 1/4 of the image when whole


def test_color_on_a_grey_constant_image_is_a_brightness_shift_in_range():
    """Saturation is the identity on one channel and contrast on a constant image; brightness adds U(-0.5, 0.5)."""
    images = torch.full([64, 1, 4, 4], 0.2)
    out = diffaugment.color(images, torch.Generator().manual_seed(3))
    shift = out[:, 0, 0, 0] - 0.2
    torch.testing.assert_close(out, images + shift[:, None, None, None])
    assert shift.min() >= -0.5 and shift.max() <= 0.5 and shift.std() > 0.2


def test_saturation_and_contrast_keep_the_means_they_scale_about():
    images = _images(n=32)
    out = diffaugment.color(images, torch.Generator().manual_seed(4))
    brightness = out.mean(dim=(1, 2, 3)) - images.mean(dim=(1, 2, 3))  # contrast and saturation keep the mean
    assert brightness.abs().max() <= 0.5 and brightness.std() > 0.1


def test_every_op_keeps_the_shape_is_differentiable_and_reproducible_from_the_seed():
    augment = DiffAugment("color,translation,cutout")
    images = _images().requires_grad_(True)
    out = augment(images, torch.Generator().manual_seed(5))
    assert out.shape == images.shape
    out.square().sum().backward()
    assert images.grad is not None and images.grad.abs().sum() > 0
    again = augment(images.detach(), torch.Generator().manual_seed(5))
    other = augment(images.detach(), torch.Generator().manual_seed(6))
    assert torch.equal(again, out.detach()) and not torch.equal(other, again)


def test_translation_gradient_flows_back_to_the_pixels_it_moved():
    images = _images(n=4).requires_grad_(True)
    out = diffaugment.translation(images, torch.Generator().manual_seed(7))
    out.sum().backward()
    kept = (out != 0).float()  # every moved pixel contributed once; pixels shifted out get no gradient
    assert images.grad.sum() == pytest.approx(kept.sum().item())


def _band_sinusoid(frequency: float, size: int = 32) -> torch.Tensor:
    """A horizontal cosine of `frequency` radians per pixel, on a grid where it is exact in the DFT."""
    x = torch.arange(size, dtype=torch.float64)
    return torch.cos(frequency * x).expand(size, size)[None, None].float()


@pytest.mark.parametrize(("band", "frequency"), [(0, 2 * math.pi * 1 / 32), (1, 2 * math.pi * 3 / 32),
                                                 (2, 2 * math.pi * 6 / 32), (3, 2 * math.pi * 12 / 32)])  # fmt: skip
def test_filter_amplifies_a_sinusoid_by_its_band_gain(band, frequency):
    gains = torch.tensor([[0.5, 1.5, 2.0, 3.0]])
    image = _band_sinusoid(frequency)
    torch.testing.assert_close(corrupt.apply_filter(image, gains), image * gains[0, band], atol=1e-5, rtol=1e-5)


def test_filter_gains_keep_the_expected_energy_and_are_one_when_not_applied():
    gains = corrupt.filter_gains(1000, torch.tensor(1.0), torch.Generator().manual_seed(8))
    power = torch.tensor(corrupt.FILTER_EXPECTED_POWER)
    torch.testing.assert_close((gains.square() * power).sum(dim=1), torch.ones(1000))
    assert torch.equal(corrupt.filter_gains(5, torch.tensor(0.0), None), torch.ones(5, 4))
    images = _images()
    assert torch.equal(corrupt.apply_filter(images, torch.ones(6, 4)), images)


def test_noise_and_cutout_leave_ungated_images_exact():
    images = _images()
    assert torch.equal(corrupt.add_noise(images, torch.tensor(0.0), None), images)
    assert torch.equal(corrupt.cutout_mask(6, 16, 16, torch.tensor(0.0), None), torch.ones(6, 1, 16, 16))
    noisy = corrupt.add_noise(images, torch.tensor(1.0), torch.Generator().manual_seed(9))
    assert 0 < (noisy - images).std() < 0.3
    mask = corrupt.cutout_mask(64, 16, 16, torch.tensor(1.0), torch.Generator().manual_seed(10))
    assert ((1 - mask).sum(dim=(1, 2, 3)) <= 64).all() and (1 - mask).mean() > 0.1  # at most an 8x8 square


def test_bgcfnc_pipe_runs_every_group_differentiably():
    pipe = AugmentPipe("bgcfnc", p=1.0)
    assert pipe.ops[-3:] == ("filter", "noise", "cutout")
    images = _images().requires_grad_(True)
    out = pipe(images, torch.Generator().manual_seed(11))
    assert out.shape == images.shape and torch.isfinite(out).all()
    out.sum().backward()
    assert images.grad.abs().sum() > 0
    assert torch.equal(pipe(images.detach(), torch.Generator().manual_seed(11)), out.detach())
