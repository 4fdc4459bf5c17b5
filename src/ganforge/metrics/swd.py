"""Sliced Wasserstein distance on Laplacian-pyramid patches (Karras et al. 2018, ProGAN, sec. 5 and appendix D).

Per pyramid level (full resolution down to 16x16, or to the first level of 16 px or less for sides that are not
powers of two; for a non-square image, by its short side), 128 random 7x7 neighbourhoods per image, anywhere a patch
fits in each dimension, are the descriptors; each set of descriptors is normalised per colour channel by its own mean
and standard deviation; the distance between the real and fake sets is the sliced Wasserstein distance over 4 x 512
random directions (Rabin et al. 2011). Reported x 1e3 per level (keyed by its band's side, or by its width x height
for non-square images) and averaged. Needs no pretrained network. Descriptors are
kept as float16 (about 1.2 GB per level per set at 16k images), and each level is compared on the metric device in
float32.
"""

import math

import torch
import torch.nn.functional as F

from ganforge import dist
from ganforge.data.loader import to_float
from ganforge.metrics.features import gather_rows, position_rng

PROTOCOL = "laplacian-16px-7x7-128desc-4x512dirs"
PATCH, DESCRIPTORS_PER_IMAGE, MIN_RESOLUTION = 7, 128, 16
DESCRIPTORS = "Laplacian pyramid patch descriptors"
_BINOMIAL = torch.tensor([1.0, 4.0, 6.0, 4.0, 1.0]) / 16


def _blur(x: torch.Tensor, gain: float = 1.0) -> torch.Tensor:
    """Separable 5-tap binomial (Gaussian) filter with reflect padding, per channel."""
    c = x.shape[1]
    k = (_BINOMIAL.to(x) * gain**0.5).view(1, 1, 1, 5).repeat(c, 1, 1, 1)  # [C, 1, 1, 5] depthwise
    x = F.conv2d(F.pad(x, (2, 2, 0, 0), mode="reflect"), k, groups=c)
    return F.conv2d(F.pad(x, (0, 0, 2, 2), mode="reflect"), k.transpose(2, 3), groups=c)


def laplacian_pyramid(images: torch.Tensor, levels: int) -> list[torch.Tensor]:
    """Bands [finest, ..., coarsest low-pass] (Burt & Adelson 1983): L_i = G_i - up(G_i+1), G_i+1 = down(blur(G_i))."""
    bands, current = [], images
    for _ in range(levels - 1):
        smaller = _blur(current)[:, :, ::2, ::2]
        up = torch.zeros_like(current)
        up[:, :, ::2, ::2] = smaller
        bands.append(current - _blur(up, gain=4.0))  # zero insertion keeps 1 sample in 4: gain 2 per axis
        current = smaller
    bands.append(current)
    return bands


def num_levels(resolution: int) -> int:
    """Levels from `resolution` (the short side) down to 16 (one level for images of 16 px or less)."""
    levels = 1
    while resolution // 2 ** (levels - 1) > MIN_RESOLUTION:
        levels += 1
    return levels


def patch_corners(generator: torch.Generator, height: int, width: int) -> torch.Tensor:
    """[D, 2] top-left corners (y, x) of 7x7 patches, uniform over the places where one fits in a height x width band.

    One draw of D pairs in [0, lcm(spans)) taken modulo each dimension's span: uniform on both, as the span divides
    the range; for a square band (one span) the draw is the span's own, as it has always been."""
    spans = torch.tensor([height - PATCH + 1, width - PATCH + 1])
    assert spans.min() >= 1, f"a {width}x{height} band is too small for 7x7 patches"
    return torch.randint(math.lcm(*spans.tolist()), (DESCRIPTORS_PER_IMAGE, 2), generator=generator) % spans


def patch_descriptors(band: torch.Tensor, corners: torch.Tensor) -> torch.Tensor:
    """[B, C, H, W] band, [B, D, 2] top-left corners (y, x) -> [B, D, C * 7 * 7] patches."""
    offsets = torch.arange(PATCH, device=band.device)
    ys = (corners[:, :, 0, None, None] + offsets[:, None]).expand(-1, -1, PATCH, PATCH)  # [B, D, 7, 7]
    xs = (corners[:, :, 1, None, None] + offsets[None, :]).expand(-1, -1, PATCH, PATCH)
    batch = torch.arange(band.shape[0], device=band.device)[:, None, None, None]
    patches = band.permute(0, 2, 3, 1)[batch, ys, xs]  # [B, D, 7, 7, C]
    return patches.permute(0, 1, 4, 2, 3).flatten(2)


def image_descriptors(images: torch.Tensor, positions: list[int], seed: int) -> list[torch.Tensor]:
    """Per level, float16 [B, 128, C * 49] descriptors; patch corners depend only on (seed, image position)."""
    x = to_float(images)
    bands = laplacian_pyramid(x, num_levels(min(x.shape[-2:])))
    out = []
    for level, band in enumerate(bands):
        rngs = [position_rng(seed, f"swd{level}", p) for p in positions]
        corners = torch.stack([patch_corners(g, *band.shape[-2:]) for g in rngs])
        out.append(patch_descriptors(band, corners.to(band.device)).to(torch.float16))
    return out


def normalize_descriptors(desc: torch.Tensor, channels: int) -> torch.Tensor:
    """Zero mean, unit standard deviation per colour channel over the whole set (ProGAN's per-set normalisation)."""
    x = desc.float().view(desc.shape[0], channels, -1)  # [N, C, 49]
    mean = x.mean(dim=(0, 2), keepdim=True)
    std = x.std(dim=(0, 2), keepdim=True).clamp_min(1e-8)
    return ((x - mean) / std).flatten(1)


def sliced_wasserstein(a: torch.Tensor, b: torch.Tensor, directions: torch.Tensor, chunk: int = 128) -> float:
    """Mean over unit `directions` [K, D] of the 1-D Wasserstein-1 distance between projections of equal-size sets.

    In 1-D the optimal transport pairs sorted values, so W1 is the mean absolute difference of the sorted projections.
    """
    assert a.shape == b.shape and directions.shape[1] == a.shape[1], (a.shape, b.shape, directions.shape)
    total = 0.0
    for dirs in directions.split(chunk):
        proj_a, proj_b = (dirs @ a.T).sort(dim=1).values, (dirs @ b.T).sort(dim=1).values  # [k, N], sorted rows
        total += (proj_a - proj_b).abs().mean(dim=1).sum().item()
    return total / directions.shape[0]


def swd_levels(real: list[torch.Tensor], fake: list[torch.Tensor], channels: int, seed: int, device) -> list[float]:
    """SWD x 1e3 per level from [N, C * 49] descriptor sets, 4 repeats of 512 random unit directions each."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for level_real, level_fake in zip(real, fake, strict=True):
        a = normalize_descriptors(level_real.to(device), channels)
        b = normalize_descriptors(level_fake.to(device), channels)
        dirs = torch.randn(4 * 512, a.shape[1], generator=gen)
        dirs = (dirs / dirs.norm(dim=1, keepdim=True)).to(device)
        out.append(sliced_wasserstein(a, b, dirs) * 1e3)
    return out


def collect_descriptors(batches, count: int, seed: int) -> list[torch.Tensor]:
    """All ranks' descriptors per level, [count * 128, C * 49] float16 in global image order (collective)."""
    positions = iter(range(dist.rank(), count, dist.world_size()))
    per_level: list[list[torch.Tensor]] = []
    for images in batches:
        desc = image_descriptors(images, [next(positions) for _ in range(images.shape[0])], seed)
        per_level = per_level or [[] for _ in desc]
        for store, d in zip(per_level, desc, strict=True):
            store.append(d)
    return [gather_rows(torch.cat(store), count).flatten(0, 1) for store in per_level]


def level_name(height: int, width: int) -> str:
    """A level's result key: its side ("32") for square images, else its width x height ("64x32")."""
    return str(height) if height == width else f"{width}x{height}"


def level_names(height: int, width: int, levels: int) -> list[str]:
    """The result keys of the pyramid's `levels` levels of height x width images, finest first: each level the size
    of its band, which keeps every second row and column of the one above (odd sides round up: 34, 17, 9)."""
    return [level_name(-(-height // 2**i), -(-width // 2**i)) for i in range(levels)]


def swd(ev, num_real: int | None, num_gen: int) -> dict | None:
    """SWD between equally many real and fake images (the smaller count); None on ranks other than 0."""
    assert ev.real_shape == ev.fake_shape, "refused by Evaluator.check_comparable, the metric's prepare step"
    # Every image source holds images of at least 8 px a side (limits.py): its 7x7 patches fit.
    assert min(ev.real_shape[1:]) >= PATCH, ev.real_shape
    count = min(ev.real_count(num_real), ev.fake_count(num_gen))
    real = collect_descriptors(ev.real_images(count, DESCRIPTORS), count, ev.options.seed)
    # The same patch positions for both sets: identical image sets then give exactly 0.
    fake = collect_descriptors(ev.fake_images(count, DESCRIPTORS), count, ev.options.seed)
    if not dist.is_main():
        return None
    channels, height, width = ev.real_shape
    with ev.stage(f"metrics: SWD, {len(real)} pyramid level{'s' * (len(real) > 1)}"):
        levels = swd_levels(real, fake, channels, ev.options.seed, ev.device)
    names = level_names(height, width, len(levels))
    results = dict(zip(names, levels, strict=True)) | {"avg": sum(levels) / len(levels)}
    return {"results": results, "num_real": count, "num_fake": count}
