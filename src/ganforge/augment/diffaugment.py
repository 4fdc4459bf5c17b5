"""DiffAugment (Zhao et al. 2020, "Differentiable Augmentation for Data-Efficient GAN Training", arXiv:2006.10738,
Sec. 3): the same differentiable transforms on every image D sees, reals and fakes, in G's step and in D's, so G
gets gradients through them. Every transform is applied to every image (no probability), with its own draw per image:

- color: brightness + U(-0.5, 0.5); saturation x U(0, 2) about the per-pixel channel mean; contrast x U(0.5, 1.5)
  about the image mean (Sec. 3, "Color").
- translation: a shift by up to 1/8 of the image size in each direction, whole pixels, zero padding ("Translation").
- cutout: a square of half the image size at a random place set to zero ("Cutout").

Random numbers come from torch's RNG on the images' device, or from `generator`, so a seeded call is reproducible.
"""

import torch
from torch import nn

TRANSLATION_RATIO = 1 / 8
CUTOUT_RATIO = 1 / 2


def _uniform(shape, low: float, high: float, like: torch.Tensor, generator) -> torch.Tensor:
    return torch.rand(shape, device=like.device, generator=generator, dtype=like.dtype) * (high - low) + low


def color(images: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    n = images.shape[0]
    images = images + _uniform([n, 1, 1, 1], -0.5, 0.5, images, generator)
    mean = images.mean(dim=1, keepdim=True)
    images = (images - mean) * _uniform([n, 1, 1, 1], 0.0, 2.0, images, generator) + mean
    mean = images.mean(dim=(1, 2, 3), keepdim=True)
    return (images - mean) * _uniform([n, 1, 1, 1], 0.5, 1.5, images, generator) + mean


def translation(images: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """out[y, x] = in[y - ty, x - tx], zero where that falls outside; |t| <= size / 8, whole pixels."""
    n, _, h, w = images.shape
    shifts = []
    for size in (h, w):
        limit = int(size * TRANSLATION_RATIO + 0.5)
        shifts.append(torch.randint(-limit, limit + 1, (n, 1), device=images.device, generator=generator))
    rows = torch.arange(h, device=images.device)[None, :] - shifts[0]  # [N, H] source row of each output row
    cols = torch.arange(w, device=images.device)[None, :] - shifts[1]  # [N, W]
    valid = ((rows >= 0) & (rows < h))[:, :, None] & ((cols >= 0) & (cols < w))[:, None, :]  # [N, H, W]
    index = rows.clamp(0, h - 1)[:, :, None] * w + cols.clamp(0, w - 1)[:, None, :]  # flat source pixel [N, H, W]
    flat = images.flatten(2)  # [N, C, H*W]
    moved = flat.gather(2, index.flatten(1)[:, None].expand(-1, images.shape[1], -1)).view_as(images)
    return moved * valid[:, None].to(images.dtype)


def cutout(images: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    """Zero a (size / 2)-square centred on a pixel drawn uniformly from the image; near the border it is cut off."""
    n, _, h, w = images.shape
    inside = torch.ones([n, h, w], device=images.device, dtype=torch.bool)
    for dim, size in ((1, h), (2, w)):
        side = int(size * CUTOUT_RATIO + 0.5)
        start = torch.randint(0, size, (n, 1), device=images.device, generator=generator) - side // 2
        pixels = torch.arange(size, device=images.device)[None, :]
        covered = (pixels >= start) & (pixels < start + side)  # [N, size]
        inside = inside & covered.unsqueeze(3 - dim)
    return images * (~inside)[:, None].to(images.dtype)


OPS = {"color": color, "translation": translation, "cutout": cutout}


class DiffAugment(nn.Module):
    """The transforms of `policy` ("color,translation,cutout" or a subset), in that order, on [N, C, H, W]."""

    def __init__(self, policy: str = "color,translation,cutout"):
        super().__init__()
        self.ops = tuple(op.strip() for op in policy.split(",") if op.strip())
        assert self.ops and all(op in OPS for op in self.ops), f"unknown DiffAugment policy {policy!r}"

    def extra_repr(self) -> str:
        return f"policy={','.join(self.ops)}"

    def forward(self, images: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        assert images.ndim == 4, f"expected [N, C, H, W] images, got {tuple(images.shape)}"
        for op in self.ops:
            images = OPS[op](images, generator)
        return images
