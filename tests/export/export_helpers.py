"""Tiny generators saved as snapshots for the export tests, the CLI call, and a stand-in for the Inception network."""

from pathlib import Path

import torch
from click.testing import CliRunner

from ganforge.cli import main
from ganforge.nets import Generator, StyleGAN3Generator
from ganforge.snapshot import save_snapshot

ARCH = dict(resolution=16, z_dim=8, w_dim=8, channel_base=128, channel_max=16, mapping_layers=2)
SG3_ARCH = dict(resolution=16, z_dim=8, w_dim=8, channel_base=128, channel_max=16, num_layers=4)


def tiny_snapshot(path: Path, c_dim: int = 0, stylegan3: bool = False, seed: int = 0, **arch) -> Path:
    """A snapshot whose noise strengths and w_avg are non-zero, so noise inputs and truncation change the images;
    `arch` replaces constructor arguments of the StyleGAN2 G (its `architecture`)."""
    torch.manual_seed(seed)
    G = StyleGAN3Generator(**SG3_ARCH, c_dim=c_dim) if stylegan3 else Generator(**ARCH | arch, c_dim=c_dim)
    with torch.no_grad():
        for name, p in G.named_parameters():
            if name.endswith("noise_strength"):
                p.fill_(0.5)
        G.mapping.w_avg.normal_()
    save_snapshot(path, G, {})
    return path


def export(*args):
    """`ganforge export ARGS` in this process; the click result (exit_code, output)."""
    return CliRunner().invoke(main, ["export", *map(str, args)])


class PixelFeatures(torch.nn.Module):
    """A cheap stand-in for the Inception network where a test is about what happens with the figures: a fixed
    random projection of the pixels to 2048 features, so different images give different statistics. With `corner`,
    only the bottom-right corner x corner pixels are seen: features that weigh the image otherwise than its pixel
    error."""

    def __init__(self, corner: int | None = None):
        super().__init__()
        self.corner = corner

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        assert images.dtype == torch.uint8 and images.ndim == 4
        if self.corner is not None:
            images = images[:, :, -self.corner :, -self.corner :]
        x = images.flatten(1).to(torch.float32) / 255
        projection = torch.randn(x.shape[1], 2048, generator=torch.Generator().manual_seed(0))
        return x @ projection
