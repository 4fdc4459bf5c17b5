"""ADA's image-space filtering and corruption groups (Karras et al. 2020, arXiv:2006.06676, appendix B, the "f",
"n" and "c" of the `bgcfnc` pipeline), as pure functions of images [N, C, H, W] and a gate probability p.

Each transform is applied to a sample with probability p; a sample it skips keeps its exact values.
- filter: the spectrum is split into four bands by frequency, [0, pi/8], [pi/8, pi/4], [pi/4, pi/2], [pi/2, pi]
  (radians per pixel, the larger of the horizontal and vertical frequency), each band is amplified by a gain
  g ~ lognormal(0, (1 ln 2)^2), and the gains are rescaled so that an image with the expected 1/f power spectrum keeps
  its energy. The split is done exactly in the Fourier domain rather than with the paper's wavelet filter bank.
- noise: additive Gaussian noise N(0, sigma^2) on every pixel and channel, sigma ~ |N(0, 0.1^2)| per image.
- cutout: a square of half the image size, centred uniformly at random (it may stick out), is set to 0, mid-grey in
  the [-1, 1] range.
"""

import math

import torch

from ganforge.augment import ops

FILTER_BANDS = (math.pi / 8, math.pi / 4, math.pi / 2)  # upper edges of the three lower bands
FILTER_LOG2_STD = 1.0
FILTER_EXPECTED_POWER = (10 / 13, 1 / 13, 1 / 13, 1 / 13)  # share of a 1/f image's energy in each band
NOISE_STD = 0.1
CUTOUT_SIZE = 0.5


def _band_index(height: int, width: int, device: torch.device) -> torch.Tensor:
    """Band (0-3) of every coefficient of rfft2 of an H x W image, [H, W // 2 + 1]."""
    fy = torch.fft.fftfreq(height, device=device).abs()[:, None] * 2 * math.pi
    fx = torch.fft.rfftfreq(width, device=device)[None, :] * 2 * math.pi
    return torch.bucketize(torch.maximum(fx, fy), ops.constant(FILTER_BANDS, device), right=True)


def filter_gains(n: int, p: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """Per-image band gains [N, 4]: lognormal where gated (each band on its own), 1 elsewhere, energy-normalised."""
    value = torch.exp2(torch.randn(n, 4, device=p.device, generator=generator) * FILTER_LOG2_STD)
    gated = torch.rand(n, 4, device=p.device, generator=generator) < p
    gains = torch.where(gated, value, torch.ones_like(value))
    power = ops.constant(FILTER_EXPECTED_POWER, p.device)
    return gains / (gains.square() * power).sum(dim=1, keepdim=True).sqrt()


def apply_filter(images: torch.Tensor, gains: torch.Tensor) -> torch.Tensor:
    """Amplify each image's four frequency bands by its gains [N, 4]; images whose gains are all 1 are unchanged."""
    n, _, h, w = images.shape
    band = _band_index(h, w, images.device)
    spectrum = torch.fft.rfft2(images) * gains[:, band][:, None]  # gains per coefficient [N, 1, H, W // 2 + 1]
    filtered = torch.fft.irfft2(spectrum, s=(h, w))
    changed = (gains != 1).any(dim=1)
    return torch.where(changed[:, None, None, None], filtered, images)


def add_noise(images: torch.Tensor, p: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    n = images.shape[0]
    sigma = torch.randn(n, device=images.device, generator=generator).abs() * NOISE_STD
    sigma = torch.where(ops.draw_gate(n, p, generator), sigma, torch.zeros_like(sigma))
    noise = torch.randn(images.shape, device=images.device, generator=generator, dtype=images.dtype)
    return images + noise * sigma[:, None, None, None]


def cutout_mask(n: int, height: int, width: int, p: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """[N, 1, H, W] of 0 inside each gated image's square and 1 elsewhere."""
    centre = torch.rand(n, 2, device=p.device, generator=generator)
    gate = ops.draw_gate(n, p, generator)
    y = (torch.arange(height, device=p.device) + 0.5) / height
    x = (torch.arange(width, device=p.device) + 0.5) / width
    inside_y = (y[None, :] - centre[:, :1]).abs() < CUTOUT_SIZE / 2  # [N, H]
    inside_x = (x[None, :] - centre[:, 1:]).abs() < CUTOUT_SIZE / 2  # [N, W]
    inside = inside_y[:, :, None] & inside_x[:, None, :] & gate[:, None, None]
    return (~inside).float()[:, None]
