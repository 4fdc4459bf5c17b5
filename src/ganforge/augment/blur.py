"""The blurred-discriminator warm-up of StyleGAN3-R (Karras et al. 2021, App. D, "Blurring the images seen by the
discriminator"): early in training every image D sees, real or fake, is blurred, and the blur fades out linearly.

The kernel is the one of the released training code: weights 2^(-(x/sigma)^2) for integer offsets |x| <= floor(3 sigma),
normalised to sum 1, applied along both axes with zero padding so the image keeps its size. With this form sigma is the
distance at which a weight halves (the standard deviation is sigma / sqrt(2 ln 2)).
"""

import math

import torch
import torch.nn.functional as F


def blur_kernel(sigma: float) -> torch.Tensor:
    """The normalised 1-D taps [2 floor(3 sigma) + 1] (float32); a single tap 1 when sigma < 1/3 (no blur)."""
    radius = math.floor(sigma * 3)
    if radius == 0:
        return torch.ones([1])
    taps = torch.exp2(-(torch.arange(-radius, radius + 1, dtype=torch.float64) / sigma).square())
    return (taps / taps.sum()).to(torch.float32)


def blur_images(images: torch.Tensor, sigma: float) -> torch.Tensor:
    """[N, C, H, W] -> the same shape, each channel blurred separably; the identity (the same tensor) when sigma is
    too small to blur."""
    taps = blur_kernel(sigma)
    if len(taps) == 1:
        return images
    radius, channels = len(taps) // 2, images.shape[1]
    taps = taps.to(images.device, images.dtype)
    x = F.conv2d(images, taps.reshape(1, 1, 1, -1).repeat(channels, 1, 1, 1), padding=(0, radius), groups=channels)
    return F.conv2d(x, taps.reshape(1, 1, -1, 1).repeat(channels, 1, 1, 1), padding=(radius, 0), groups=channels)
