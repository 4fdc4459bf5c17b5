"""Tiny generators saved as snapshots for the generate tests, and the images they should give, computed by hand."""

from pathlib import Path

import numpy as np
import PIL.Image
import torch

from ganforge.data.loader import to_uint8
from ganforge.generate import GenerateOptions
from ganforge.nets import Generator
from ganforge.snapshot import load_snapshot, save_snapshot

ARCH = dict(resolution=16, z_dim=8, w_dim=8, channel_base=64, channel_max=8, mapping_layers=2)


def tiny_snapshot(path: Path, c_dim: int = 0, img_channels: int = 3, seed: int = 0, **arch) -> Path:
    """A snapshot whose noise strengths and w_avg are non-zero, so noise modes and truncation change the images;
    `arch` replaces entries of ARCH."""
    torch.manual_seed(seed)
    G = Generator(**(ARCH | arch), c_dim=c_dim, img_channels=img_channels)
    with torch.no_grad():
        for name, p in G.named_parameters():
            if name.endswith("noise_strength"):
                p.fill_(0.5)
        G.mapping.w_avg.normal_()
    save_snapshot(path, G, {})
    return path


def options(network: Path, outdir: Path, **fields) -> GenerateOptions:
    return GenerateOptions(network=network, outdir=outdir, device="cpu", **fields)


def by_hand(snapshot: Path, seeds, class_index=None, psi=1.0, cutoff=None, noise_mode="const", batch=16) -> np.ndarray:
    """What load_snapshot's generator gives for these seeds called on batches of `batch` of them (as generate
    batches them: another batch size rounds differently), as uint8 [N, H, W, C]."""
    G, _ = load_snapshot(snapshot)
    z = torch.from_numpy(np.stack([np.random.RandomState(s).randn(G.z_dim) for s in seeds])).float()
    c = torch.zeros([len(seeds), G.c_dim])
    if class_index is not None:
        c[:, class_index] = 1
    with torch.no_grad():
        chunks = zip(z.split(batch), c.split(batch), strict=True)
        img = torch.cat([G(zs, cs, psi=psi, cutoff=cutoff, noise_mode=noise_mode) for zs, cs in chunks])
    return to_uint8(img).permute(0, 2, 3, 1).numpy()


def read_png(path: Path) -> np.ndarray:
    array = np.asarray(PIL.Image.open(path))
    return array[:, :, None] if array.ndim == 2 else array
