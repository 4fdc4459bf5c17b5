"""ADA's filter, noise and cutout groups against slow per-image, per-pixel references that take the same seeded draws;
the gate probability is set to one of the drawn values, so a sample is applied exactly when its draw is below p; and
the filter's bands along both axes of non-square images."""

import itertools
import math

import pytest
import torch

from ganforge.augment import corrupt


def _below_some(draws: torch.Tensor) -> torch.Tensor:
    """A gate probability equal to one of `draws`, with draws both below and above it."""
    return draws.flatten().sort().values[draws.numel() // 2]


def _cosine(height: int, width: int, ky: int, kx: int) -> torch.Tensor:
    """cos(2 pi (ky y / H + kx x / W)): exact in the DFT, at ky / H and kx / W cycles per pixel."""
    y, x = torch.arange(height, dtype=torch.float64)[:, None], torch.arange(width, dtype=torch.float64)[None, :]
    return torch.cos(2 * math.pi * (ky * y / height + kx * x / width))[None, None].float()


# The band of max(vertical, horizontal) frequency in radians per pixel: edges pi/8, pi/4, pi/2.
@pytest.mark.parametrize(("height", "width", "ky", "kx", "band"), [
    (32, 16, 12, 0, 3),  # vertical 2.36
    (32, 16, 3, 0, 1),  # vertical 0.59
    (17, 24, 1, 0, 0),  # vertical 0.370, just below pi/8 = 0.393
    (17, 24, 2, 0, 1),  # vertical 0.739, just below pi/4 = 0.785
    (16, 32, 1, 12, 3),  # vertical 0.39 (band 1), horizontal 2.36 (band 3)
    (16, 32, 3, 2, 2),  # vertical 1.18 (band 2), horizontal 0.39 (band 1)
])  # fmt: skip
def test_filter_bands_take_the_larger_of_the_vertical_and_horizontal_frequency(height, width, ky, kx, band):
    gains = torch.tensor([[0.5, 1.5, 2.0, 3.0]])
    image = _cosine(height, width, ky, kx)
    torch.testing.assert_close(corrupt.apply_filter(image, gains), image * gains[0, band], atol=1e-5, rtol=1e-5)


def test_filter_gains_are_lognormal_with_a_std_of_one_octave_where_gated_then_energy_normalised():
    draws = torch.Generator().manual_seed(30)  # N(0, 1) per image and band, then U[0, 1) per image and band
    octaves, gate = torch.randn(6, 4, generator=draws), torch.rand(6, 4, generator=draws)
    p = _below_some(gate)
    gains = corrupt.filter_gains(6, p, torch.Generator().manual_seed(30))
    power = (10 / 13, 1 / 13, 1 / 13, 1 / 13)
    for row, octave, drawn in zip(gains, octaves, gate, strict=True):
        raw = [2 ** o.item() if u < p else 1.0 for o, u in zip(octave, drawn, strict=True)]
        energy = math.sqrt(sum(g * g * share for g, share in zip(raw, power, strict=True)))
        torch.testing.assert_close(row, torch.tensor([g / energy for g in raw]))


def test_noise_adds_gaussian_noise_of_a_drawn_sigma_to_the_gated_images_only():
    images = torch.rand([8, 2, 3, 3], generator=torch.Generator().manual_seed(31))
    draws = torch.Generator().manual_seed(32)  # sigma ~ |N(0, 0.1^2)| per image, the gate, then the noise
    sigma, gate = torch.randn(8, generator=draws).abs() * 0.1, torch.rand(8, generator=draws)
    noise = torch.randn(images.shape, generator=draws)
    p = _below_some(gate)
    out = corrupt.add_noise(images, p, torch.Generator().manual_seed(32))
    for image, noisy, s, u, n in zip(images, out, sigma, gate, noise, strict=True):
        torch.testing.assert_close(noisy, image + n * s if u < p else image, rtol=0, atol=0)


def test_cutout_mask_zeroes_a_half_size_square_about_the_drawn_centre_of_the_gated_images():
    """Pixel (y, x), centre ((y + 0.5) / H, (x + 0.5) / W), is in the square when both distances to the drawn centre
    are below 1/4 of the image."""
    height, width = 8, 6
    draws = torch.Generator().manual_seed(33)  # the centre in [0, 1)^2 per image, then the gate
    centre, gate = torch.rand(32, 2, generator=draws), torch.rand(32, generator=draws)
    p = _below_some(gate)
    mask = corrupt.cutout_mask(32, height, width, p, torch.Generator().manual_seed(33))
    assert mask.shape == (32, 1, height, width)
    for image_mask, (cy, cx), u in zip(mask[:, 0], centre.tolist(), gate, strict=True):
        for y, x in itertools.product(range(height), range(width)):
            inside = abs((y + 0.5) / height - cy) < 0.25 and abs((x + 0.5) / width - cx) < 0.25
            assert image_mask[y, x] == (0 if u < p and inside else 1)
