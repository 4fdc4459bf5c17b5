"""Perceptual path length (Karras et al. 2019, "A Style-Based Generator Architecture for GANs", Sec. 3.2), as the
official StyleGAN2-ADA metrics define ppl_zfull, ppl_wfull, ppl_zend and ppl_wend.

A latent path is cut into steps of length eps = 1e-4 and the perceptual distance between the images at both ends of
a step, divided by eps^2, is averaged over samples:

- Z (eq. 2): z1, z2 ~ N(0, I) scaled to unit length and interpolated along the great circle (slerp) at t and t + eps,
  each point then mapped to w;
- W (eq. 3): w1 = f(z1), w2 = f(z2) interpolated linearly (lerp) at t and t + eps;
- "full": t ~ U[0, 1); "end": t = 0, the path's end point.

The distance is the squared distance of VGG16 LPIPS features (NVlabs' vgg16.pt, perceptual.VGG16Features) of the
face crop (rows 3/8 to 7/8, columns 2/8 to 6/8: the paper's images are faces), after averaging f x f pixel blocks
with f = resolution // 256 (the frame brought to at most 256 px, as VGG16 saw small images in training), pixels in
[0, 255], grey images repeated to RGB. Per-layer noise is StyleGAN2's fixed noise (`noise_const`), drawn anew for
each batch and shared by both ends of every step; a StyleGAN3 generator has none. The result is the mean of the
distances from the 1st percentile (rounded down to a sample) to the 99th (rounded up), inclusive: a few paths cross
a discontinuity of the generator, where the finite difference is huge and would dominate a plain mean.

A non-square generator's images (StyleGAN2 with an aspect) are no portraits to crop a face from: VGG16 sees the
whole frame, averaged over f x f blocks with f from the short side (`resolution`), and the result records that
protocol; such a PPL is comparable between runs on images of the same shape only.

Every sample draws its latents and t from (seed, position) and every batch of `pairs` samples its noise from (seed,
batch), and ranks take whole batches: the value depends on the seed and the batch size, not on the number of ranks.
Images are generated and compared in IEEE fp32 (TF32's 10-bit mantissa would swamp an eps of 1e-4).
"""

import contextlib
from pathlib import Path

import numpy as np
import torch

from ganforge import dist
from ganforge.errors import UserError
from ganforge.metrics import perceptual
from ganforge.metrics.features import gather_rows, position_rng, progress
from ganforge.metrics.perceptual import VGG16Features, squared_distance
from ganforge.metrics.shapes import image_size
from ganforge.numerics import fp32_math

EPSILON = 1e-4
LPIPS_SIDE = 256  # frames larger than this are averaged down by whole factors
LOW_PERCENTILE, HIGH_PERCENTILE = 1, 99
FEATURE_NETWORK = VGG16Features.name
VGG16_FIX = "pass NVlabs' vgg16.pt, the VGG16 LPIPS TorchScript of the official projector and PPL"


def protocol(space: str, sampling: str, square: bool = True) -> str:
    """The protocol a result records: its path, its t, and the distance and settings every variant shares; the face
    crop of square images, or the whole frame of non-square ones (see lpips_pixels)."""
    path = "slerp of unit z" if space == "z" else "lerp of w"
    t = "t~U[0,1)" if sampling == "full" else "t=0"
    frame = "face crop" if square else "whole non-square frame"
    return (
        f"karras2019-ppl: {path}, {t}, eps 1e-4, vgg16-lpips squared / eps^2, {frame}, box-downsampled to "
        f"{LPIPS_SIDE} px{'' if square else ' on the short side'}, mean of p{LOW_PERCENTILE}-p{HIGH_PERCENTILE}"
    )


def slerp(a: torch.Tensor, b: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """The point at fraction t [N, 1] of the great-circle arc from a to b [N, D], both taken to unit length (Shoemake
    1985): cos(t theta) a + sin(t theta) u, u the unit vector of b's part orthogonal to a, theta the angle a to b."""
    a = a / a.norm(dim=-1, keepdim=True)
    b = b / b.norm(dim=-1, keepdim=True)
    cos_theta = (a * b).sum(dim=-1, keepdim=True).clamp(-1, 1)
    u = b - cos_theta * a
    u = u / u.norm(dim=-1, keepdim=True)
    angle = t * torch.acos(cos_theta)
    out = a * torch.cos(angle) + u * torch.sin(angle)
    return out / out.norm(dim=-1, keepdim=True)


def step_ws(G, z: torch.Tensor, c: torch.Tensor, t: torch.Tensor, space: str) -> torch.Tensor:
    """ws [2N, num_ws, w_dim] of both ends of each step: the N points at t, then the N at t + EPSILON, of the paths
    from z[:, 0] to z[:, 1] (z [N, 2, z_dim], t [N]): slerp in Z, lerp in W."""
    z0, z1, t = z[:, 0], z[:, 1], t[:, None]
    if space == "z":
        ends = torch.cat([slerp(z0, z1, t), slerp(z0, z1, t + EPSILON)])
        return G.mapping(ends, torch.cat([c, c]))
    w0, w1 = G.mapping(torch.cat([z0, z1]), torch.cat([c, c])).chunk(2)  # [N, num_ws, w_dim] each
    t = t[:, :, None]
    return torch.cat([w0.lerp(w1, t), w0.lerp(w1, t + EPSILON)])


def lpips_pixels(images: torch.Tensor, resolution: int) -> torch.Tensor:
    """Generated images in [-1, 1] -> the face crop of square images (the whole frame of non-square ones), averaged
    over f x f blocks (f = resolution // 256, `resolution` the short side), in [0, 255]."""
    n, channels, height, width = images.shape
    x = images
    if height == width:
        eighth = height // 8
        x = images[:, :, 3 * eighth : 7 * eighth, 2 * eighth : 6 * eighth]
    factor = resolution // LPIPS_SIDE
    if factor > 1:
        h, w = x.shape[2] // factor, x.shape[3] // factor
        x = x.reshape(n, channels, h, factor, w, factor).mean(dim=(3, 5))  # [N, C, h, f, w, f] -> blocks averaged
    return (x + 1) * 127.5


def trimmed_mean(distances: torch.Tensor) -> float:
    """The mean of the distances from the LOW_PERCENTILE-th percentile rounded down to a sample to the
    HIGH_PERCENTILE-th rounded up, both included (numpy's "lower" and "higher" percentiles), in float64."""
    d = distances.double().cpu().numpy()
    low = np.percentile(d, LOW_PERCENTILE, method="lower")
    high = np.percentile(d, HIGH_PERCENTILE, method="higher")
    return float(d[(d >= low) & (d <= high)].mean())


def noise_buffers(G) -> list[torch.Tensor]:
    """G's fixed per-layer noise: StyleGAN2's `*.noise_const` buffers in module order (StyleGAN3 has none)."""
    return [buffer for name, buffer in G.named_buffers() if name.endswith(".noise_const")]


def redraw_noise(buffers: list[torch.Tensor], seed: int, batch: int) -> None:
    """Batch `batch`'s noise: every buffer drawn from N(0, 1) in order, from (seed, batch) on the CPU, so that it is the
    same on any device."""
    gen = position_rng(seed, "ppl-noise", batch)
    for buffer in buffers:
        buffer.copy_(torch.randn(buffer.shape, generator=gen))


@contextlib.contextmanager
def _borrowed_noise(G):
    """G's noise buffers, given back as they were however the metric ends (the official metric redraws them on a copy
    of G; a copy would hold a second generator)."""
    buffers = noise_buffers(G)
    saved = [buffer.clone() for buffer in buffers]
    try:
        yield buffers
    finally:
        for buffer, old in zip(buffers, saved, strict=True):
            buffer.copy_(old)


def draw(seed: int, position: int, z_dim: int, sampling: str) -> tuple[torch.Tensor, float]:
    """Sample `position`'s path: its two latents [2, z_dim] and t (0 for "end")."""
    gen = position_rng(seed, "ppl", position)
    z = torch.randn([2, z_dim], generator=gen)
    t = float(torch.rand([], generator=gen, dtype=torch.float64)) if sampling == "full" else 0.0
    return z, t


def _labels(G, positions: range, seed: int, dataset) -> torch.Tensor:
    """[N, c_dim] labels of the dataset's images drawn at random, from (seed, position) as the other metrics draw them
    (features.generator_batches); [N, 0] for an unconditional G."""
    if G.c_dim == 0:
        return torch.zeros(len(positions), 0)
    picks = [int(torch.randint(dataset.num_raw, (), generator=position_rng(seed, "c", p))) for p in positions]
    return torch.from_numpy(np.stack([dataset.label(i) for i in picks]))


def load_vgg16(path, device) -> VGG16Features:
    """NVlabs' VGG16 LPIPS file given as --vgg16, frozen on `device`, probed (perceptual.load_vgg16)."""
    return perceptual.load_vgg16(Path(path), device, "--vgg16", VGG16_FIX)


def prepare(ev, name: str) -> torch.nn.Module:
    """Check that `name` can run on this evaluator's sources and load its VGG16 (before any metric of the run)."""
    if ev.generator is None:
        raise UserError(f"--metrics: {name} measures a generator; pass --network SNAPSHOT instead of --fake images")
    if ev.generator.c_dim > 0 and ev.real is None:
        raise UserError(
            f"--data: {name} of a conditional generator draws its labels from the dataset's, as the official metric "
            "does; pass the dataset it was trained on"
        )
    assert ev.options.vgg16 is not None, "compute_metrics refuses PPL without --vgg16 (registry.file_problems)"
    return ev.network("vgg16", lambda: load_vgg16(ev.options.vgg16, ev.device))


def _distances(G, net, z, c, t, space: str) -> torch.Tensor:
    """[N] perceptual distances over eps^2 of N steps, float64."""
    images = G.synthesis(step_ws(G, z, c, t, space), noise_mode="const", force_fp32=True)
    a, b = net(lpips_pixels(images, G.resolution)).double().chunk(2)
    return squared_distance(a, b) / EPSILON**2


def ppl(ev, num_real, num_gen: int, space: str, sampling: str, name: str) -> dict | None:
    """Perceptual path length of ev.generator over `num_gen` paths (collective); None on ranks other than 0."""
    G, opts = ev.generator, ev.options
    net = prepare(ev, name)
    count, pairs = ev.fake_count(num_gen), max(opts.batch_size // 2, 1)  # 2 images per path in each forward pass
    num_batches = -(-count // pairs)
    mine = range(dist.rank(), num_batches, dist.world_size())  # whole batches: each holds one draw of the noise
    local = torch.zeros([len(mine), pairs], dtype=torch.float64, device=ev.device)
    steps = (range(k * pairs, min(k * pairs + pairs, count)) for k in mine)
    what = f"metrics: {name}, {count} paths of the generator"
    with fp32_math(tf32=False), torch.no_grad(), _borrowed_noise(G) as buffers:
        for row, positions in enumerate(progress(steps, count, what, opts.progress, source=None, work=None)):
            redraw_noise(buffers, opts.seed, mine[row])
            drawn = [draw(opts.seed, p, G.z_dim, sampling) for p in positions]
            z = torch.stack([z for z, _ in drawn]).to(ev.device)
            t = torch.tensor([t for _, t in drawn], dtype=torch.float32, device=ev.device)
            c = _labels(G, positions, opts.seed, ev.real).to(ev.device)
            local[row, : len(positions)] = _distances(G, net, z, c, t, space)
    distances = gather_rows(local, num_batches).flatten()[:count]  # [batch, pair] -> position order
    if not dist.is_main():
        return None
    out = {"value": trimmed_mean(distances), "num_real": 0, "num_fake": count}
    height, width = image_size(G)
    if height != width:  # not the registry's protocol (the face crop of square images): the whole frame
        out["extra"] = {"protocol": protocol(space, sampling, square=False)}
    return out
