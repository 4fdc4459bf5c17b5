"""Batched synthesis for `ganforge generate`: ws from latents, images from ws, per-image noise from seeds.

Each image is computed from its own latent, class and (for `random` noise) seed: no operation mixes the images of a
batch. The batch's size still changes the rounding: matrix products and convolutions pick their kernels by the shape
they are given (on the CPU, MKL's products of 1 or 2 rows and oneDNN's convolutions of one image at low resolutions
use other ones than bigger batches; cuBLAS and cuDNN choose by shape too), so float32 sums in another order, and an
occasional pixel lands one level of 255 away. The same command therefore writes the same bytes, and a batch of one
synthesizes every image alone, as NVlabs' generate.py does: its file is the same whatever other seeds are asked for.
Keeping every image alone always would cost 1.4-1.5x (256 px) to 6-7x (32 px) the CPU time of batches
(benchmarks/generate_batch_rounding.py).
"""

import time

import torch

from ganforge.nets import Generator
from ganforge.nets.noise import noise_buffer_names, per_image_noise
from ganforge.progress import progress_bar


@torch.no_grad()
def map_latents(G: Generator, z: torch.Tensor, c: torch.Tensor, psi: float, cutoff, batch: int) -> torch.Tensor:
    """z [N, z_dim] with label vectors c [N, c_dim] -> truncated ws [N, num_ws, w_dim] on the CPU (StyleGAN Sec. 3.3:
    w_avg + psi (w - w_avg) for the first `cutoff` ws)."""
    assert c.shape == (len(z), G.c_dim), (c.shape, z.shape, G.c_dim)
    device = next(G.parameters()).device
    ws = []
    for z_chunk, c_chunk in zip(z.split(batch), c.split(batch), strict=True):
        ws.append(G.mapping(z_chunk.to(device), c_chunk.to(device), psi=psi, cutoff=cutoff).cpu())
    return torch.cat(ws)


def seeded_noise(G: Generator, seeds):
    """Per-image noise drawn from each image's seed, for `noise_mode="const"`: layer by layer from
    torch.Generator(seed) in module order (what the official `random` mode draws from the global generator, made
    reproducible per image)."""
    generators = [torch.Generator().manual_seed(seed) for seed in seeds]
    maps = {}
    for name in noise_buffer_names(G):
        const = G.synthesis.get_buffer(name)
        noise = torch.stack([torch.randn(const.shape, generator=g) for g in generators]).unsqueeze(1)
        maps[name] = noise.to(const.device)  # [N, 1, H, W] of the layer
    return per_image_noise(G, maps)


class Renderer:
    """Synthesizes ws in batches on G's device, counting images and seconds for the closing img/s note."""

    def __init__(
        self,
        G: Generator,
        noise_mode: str,
        batch: int,
        total: int,
        transform: torch.Tensor | None = None,
        row_noise: dict[str, torch.Tensor] | None = None,
    ):
        """transform: StyleGAN3's input transform [3, 3] (see nets.input_transform), or None for the network's.
        row_noise: the noise maps stored with projected rows, {buffer: [N, H, W]}, used in the `const` mode by the
        rows' indices (which projected rows pass as their noise seeds), so that a row renders as it was projected."""
        self.G, self.noise_mode, self.batch, self.transform = G, noise_mode, batch, transform
        self.row_noise = row_noise
        self.images, self.seconds = 0, 0.0
        self.bar = progress_bar(total=total, unit="img", desc="generate", leave=False)

    @torch.no_grad()
    def __call__(self, ws: torch.Tensor, noise_seeds) -> torch.Tensor:
        """ws [N, num_ws, w_dim] -> images [N, C, H, W] float32 on the CPU, about [-1, 1]. `noise_seeds` (one per
        image) are used when the noise mode is `random`."""
        device = next(self.G.parameters()).device
        out = []
        for start in range(0, len(ws), self.batch):
            chunk = ws[start : start + self.batch].to(device)
            seeds = noise_seeds[start : start + self.batch]
            began = time.perf_counter()
            out.append(self._synthesize(chunk, seeds).cpu())  # .cpu() waits for the device
            self.seconds += time.perf_counter() - began
            self.images += len(chunk)
            self.bar.update(len(chunk))
        return torch.cat(out)

    def synthesize_ws(self, ws: torch.Tensor) -> torch.Tensor:
        """One forward of the synthesis network as __call__ runs it, uncounted (for measuring its memory)."""
        return self._synthesize(ws, [0] * len(ws))

    def _synthesize(self, ws: torch.Tensor, seeds) -> torch.Tensor:
        if self.transform is not None:  # StyleGAN3: no noise inputs; the image moves through the Fourier input
            return self.G.synthesis(ws, noise_mode=self.noise_mode, transform=self.transform)
        if self.noise_mode == "const" and self.row_noise:
            maps = {name: rows[list(seeds)].unsqueeze(1).to(ws.device) for name, rows in self.row_noise.items()}
            with per_image_noise(self.G, maps):
                return self.G.synthesis(ws, noise_mode="const")
        if self.noise_mode != "random":
            return self.G.synthesis(ws, noise_mode=self.noise_mode)
        with seeded_noise(self.G, seeds):
            return self.G.synthesis(ws, noise_mode="const")

    def close(self) -> None:
        self.bar.close()

    @property
    def images_per_second(self) -> float:
        return self.images / self.seconds if self.seconds > 0 else 0.0
