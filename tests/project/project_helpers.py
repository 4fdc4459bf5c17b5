"""A tiny generator whose images stay inside [-1, 1] (so the saved targets are not clipped and a projection can
reproduce them), its snapshot, and target images it made from known latents."""

from pathlib import Path

import numpy as np
import PIL.Image
import torch

from ganforge.generate.writers import hwc
from ganforge.nets import Generator
from ganforge.snapshot import save_snapshot

RES, W_DIM = 8, 16


def tiny_generator(seed: int = 0, noise_strength: float = 0.05) -> Generator:
    """Random weights, toRGB scaled down so that the images stay in range, a little per-layer noise."""
    torch.manual_seed(seed)
    G = Generator(resolution=RES, img_channels=3, z_dim=W_DIM, w_dim=W_DIM, channel_base=256, channel_max=32,
                  mapping_layers=2)  # fmt: skip
    with torch.no_grad():
        for name, p in G.named_parameters():
            if "torgb" in name and name.endswith("weight"):
                p.mul_(0.3)
            if name.endswith("noise_strength"):
                p.fill_(noise_strength)
    return G.eval().requires_grad_(False)


def saved_generator(folder: Path, **kwargs) -> tuple[Path, Generator]:
    G = tiny_generator(**kwargs)
    path = folder / "G.safetensors"
    save_snapshot(path, G, {})
    return path, G


def known_targets(G: Generator, folder: Path, count: int = 2, seed: int = 5) -> tuple[list[Path], torch.Tensor]:
    """PNGs of G's images of `count` mapped latents (with its own noise), and those ws [count, num_ws, w_dim]."""
    z = torch.randn([count, G.z_dim], generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        ws = G.mapping(z, torch.zeros(count, 0))
        images = hwc(G.synthesis(ws, noise_mode="const", force_fp32=True))
    paths = []
    for i, image in enumerate(images):
        paths.append(folder / f"target{i}.png")
        PIL.Image.fromarray(np.ascontiguousarray(image)).save(paths[-1])
    return paths, ws
