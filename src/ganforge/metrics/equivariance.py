"""Equivariance metrics EQ-T, EQ-T_frac and EQ-R (Karras et al. 2021, "Alias-Free GANs", Sec. 2 and App. E).

For a generated image, the generator is run again with a transformed input (through its Fourier input layer's
transform), and the result is compared with the original image transformed in image space: PSNR in dB over the
pixels that both images define, with a peak-to-peak range of 2 ([-1, 1] images). High is good.

- EQ-T (eqt50k_int): translation by a whole number of pixels, up to 1/8 of the image per axis (App. E.1).
- EQ-T_frac (eqt50k_frac): translation by any amount up to 1/8, applied to the image with a Lanczos-3 (E.2).
- EQ-R (eqr50k): rotation by any angle; both sides are low-pass filtered to the band that survives the rotation,
  the reference by an oriented band-limiting upsampler followed by bilinear sampling, the generated one by the
  same band limit without rotating ("pseudo-rotation") (E.3).

Invalid pixels (those that come from outside the image, or whose filter footprint leaves it) are masked out as
upstream. Every sample draws its own latent, label and transform from (seed, position), so a value depends neither
on the batch size nor on the number of ranks (up to float rounding); upstream draws one transform per batch.
Squared errors and mask counts are summed in float64.
"""

import inspect
import math
from functools import partial

import torch
import torch.nn.functional as F

from ganforge import dist
from ganforge.errors import UserError
from ganforge.metrics.features import position_rng, progress
from ganforge.nets.filtered_lrelu import upfir
from ganforge.nets.stylegan3 import input_transform

PROTOCOL = "karras2021-appE: translate<=0.125, rotate<=180deg, lanczos3, 4x band-limited bilinear"
TRANSLATE_MAX = 0.125  # of the image size, per axis
LANCZOS_A = 3
ROTATE_UP = 4  # oversampling before bilinear resampling
ROTATE_SUPPORT = 2 * LANCZOS_A  # half-width of the oriented filter, in pixels
DESIGN_SUPPORT = 64  # half-width of the grid the oriented filter is designed on (cropped to ROTATE_SUPPORT)


# --- image-space operators ------------------------------------------------------------------------------------------


def translate_integer(x: torch.Tensor, tx: float, ty: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Shift [N, C, H, W] images by round(tx * W), round(ty * H) pixels (right, down) -> (image, mask)."""
    h, w = x.shape[2:]
    ix, iy = round(tx * w), round(ty * h)
    mask = torch.zeros_like(x)
    mask[:, :, max(iy, 0) : h + min(iy, 0), max(ix, 0) : w + min(ix, 0)] = 1  # pixels whose source is inside
    return torch.roll(x, shifts=(iy, ix), dims=(2, 3)), mask


def lanczos_taps(frac: float, a: int = LANCZOS_A) -> torch.Tensor:
    """Normalized weights w[j] = L(m_j - frac) of the samples at offsets m_j = j - (a - 1), j < 2a, from the point
    `frac` (0 <= frac < 1) past a sample; L(s) = sinc(s) sinc(s / a) on |s| < a, the Lanczos kernel (Duchon 1979).
    """
    s = torch.arange(2 * a, dtype=torch.float64) - (a - 1) - frac
    taps = torch.sinc(s) * torch.sinc(s / a)
    return taps / taps.sum()


def translate_fractional(x: torch.Tensor, tx: float, ty: float, a: int = LANCZOS_A):
    """Shift images by (tx * W, ty * H) pixels with Lanczos-a interpolation -> (image, mask).

    z[n] = sum_k x[k] L(n - t - k) for t = i + f (i whole, 0 <= f < 1); the mask keeps pixels whose 2a taps all lie
    inside the image.
    """
    h, w = x.shape[2:]
    out, mask = x, torch.ones_like(x)
    for dim, t, size in ((3, tx * w, w), (2, ty * h, h)):
        i = math.floor(t)
        taps = lanczos_taps(t - i, a).flip(0).to(x)  # correlation taps for offsets -a .. a-1 around n - i
        shifted = torch.roll(out, shifts=i, dims=dim)
        pad = [a, a - 1, 0, 0] if dim == 3 else [0, 0, a, a - 1]
        kernel = taps.reshape(1, 1, *((1, -1) if dim == 3 else (-1, 1))).expand(x.shape[1], 1, -1, -1)
        # circular: the roll moved the samples past an edge to the other side, where the footprint looks for them
        out = F.conv2d(F.pad(shifted, pad, mode="circular"), kernel, groups=x.shape[1])
        valid = torch.zeros(size, dtype=x.dtype, device=x.device)
        valid[max(i + a, 0) : size + min(i - a + 1, 0)] = 1  # footprint [n - i - a, n - i + a - 1] inside
        mask = mask * (valid.reshape(1, 1, 1, -1) if dim == 3 else valid.reshape(1, 1, -1, 1))
    return out, mask


def _lanczos_window(x: torch.Tensor, a: int) -> torch.Tensor:
    return torch.where(x.abs() < a, torch.sinc(x / a), torch.zeros_like(x))


def bandlimit_filter(
    motion: torch.Tensor,
    up: int,
    a: int = LANCZOS_A,
    support: int = ROTATE_SUPPORT,
    design_support: int = DESIGN_SUPPORT,
) -> torch.Tensor:
    """2-D FIR filter, sampled at 1/up pixel, that keeps the frequencies inside both the image's Nyquist square and
    that square rotated by the 2x2 `motion`, windowed the same way (App. E.3). [2 support up - 1] squared taps.

    Ideal filter: the convolution of the two (unrotated and rotated) separable sincs; window: the convolution of
    the two Lanczos windows. Both convolutions are circular, by FFT, on a grid of +-design_support pixels, then
    the product is cropped to +-support. Each of the up x up polyphase components is normalized to sum 1 / up^2,
    so that upsampling with gain up^2 keeps a constant image constant whatever the sampling phase.
    """
    n = 2 * design_support * up - 1
    taps = torch.fft.ifftshift((torch.arange(n, device=motion.device) - (n - 1) / 2) / up)  # 0 at index 0
    x, y = taps[None, :], taps[:, None]
    xo, yo = motion[0, 0] * x + motion[0, 1] * y, motion[1, 0] * x + motion[1, 1] * y  # rotated coordinates

    def convolve_with_separable(profile: torch.Tensor, rotated: torch.Tensor) -> torch.Tensor:
        """Circular convolution of profile(y) profile(x) with `rotated`; the separable factor's 2-D spectrum is the
        outer product of 1-D spectra (real input: half spectrum along x)."""
        spectrum = torch.fft.fft(profile)[:, None] * torch.fft.rfft(profile)[None, :]
        return torch.fft.irfftn(spectrum * torch.fft.rfftn(rotated), s=rotated.shape)

    ideal = convolve_with_separable(torch.sinc(taps), torch.sinc(xo) * torch.sinc(yo))
    window = convolve_with_separable(_lanczos_window(taps, a), _lanczos_window(xo, a) * _lanczos_window(yo, a))
    f = torch.fft.fftshift(ideal * window)
    crop = (design_support - support) * up
    # one zero row and column make whole up x up cells: [cell y, phase y, cell x, phase x]
    f = F.pad(f[crop:-crop, crop:-crop], [0, 1, 0, 1]).reshape(2 * support, up, 2 * support, up)
    f = f / f.sum(dim=[0, 2], keepdim=True) / up**2
    return f.reshape(2 * support * up, 2 * support * up)[:-1, :-1]


def rotation_motion(angle: float, device=None) -> torch.Tensor:
    """The 2x2 matrix that rotates an image (y down) by `angle` radians, counter-clockwise on screen."""
    c, s = math.cos(angle), math.sin(angle)
    return torch.tensor([[c, s], [-s, c]], device=device)


def rotate(x: torch.Tensor, angle: float, up: int = ROTATE_UP) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotate [N, C, H, W] images about their centre -> (image, mask): band-limited upsampling by `up` (so that
    bilinear interpolation is nearly exact), then bilinear sampling at the rotated pixel centres."""
    motion = rotation_motion(angle, x.device)
    f = bandlimit_filter(motion, up)
    p = f.shape[0] // 2
    k = f.shape[0]
    # pad so that the upsampled image has up * W + 2p samples: p / up pixels of margin on each side
    lo, hi = p + (k + up - 1) // 2, p + (k - up) // 2
    y = upfir(x, f.to(x.dtype), up, (lo, hi, lo, hi))
    h, w = x.shape[2:]
    theta = torch.zeros(2, 3, device=x.device)
    theta[:, :2] = torch.linalg.inv(motion)  # output pixel -> source position, in [-1, 1] image coordinates
    theta[0, 2], theta[1, 2] = 1 / (up * w), 1 / (up * h)  # upsampled samples sit half a fine sample early
    theta[0] *= w / (w + 2 * p / up)  # image coordinates -> coordinates of the larger upsampled grid
    theta[1] *= h / (h + 2 * p / up)
    grid = F.affine_grid(theta[None].expand(x.shape[0], 2, 3), list(x.shape), align_corners=False)
    out = F.grid_sample(y, grid.to(y.dtype), mode="bilinear", padding_mode="zeros", align_corners=False)
    valid = torch.zeros_like(y)
    c = 2 * p + 1  # away from the border the filter's zero padding reaches
    valid[:, :, c:-c, c:-c] = 1
    return out, F.grid_sample(valid, grid.to(y.dtype), mode="nearest", padding_mode="zeros", align_corners=False)


def pseudo_rotate(x: torch.Tensor, angle: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Give images the frequency content a rotation by `angle` would leave, without rotating them (App. E.3)."""
    f = bandlimit_filter(rotation_motion(-angle, x.device), up=1).to(x.dtype)
    c = f.shape[0] // 2
    mask = torch.zeros_like(x)
    mask[:, :, c:-c, c:-c] = 1
    return upfir(x, f, 1, (c, c, c, c)), mask


# --- the metric -----------------------------------------------------------------------------------------------------


def psnr(squared_error_sum: float, count: float) -> float:
    """PSNR in dB for images in [-1, 1]: 20 log10(peak-to-peak 2) - 10 log10(mean squared error); inf if exact."""
    if squared_error_sum == 0:
        return math.inf
    return 20 * math.log10(2) - 10 * math.log10(squared_error_sum / count)


def _unchanged(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return x, torch.ones_like(x)


def draw(kind: str, seed: int, position: int, resolution: int):
    """Sample `position`'s transform: (input transform [3, 3], operator on the original image, operator on the
    image generated with the transform); operators return (image, mask)."""
    gen = position_rng(seed, f"eq-{kind}", position)
    if kind == "eqr":
        angle = (float(torch.rand([], generator=gen, dtype=torch.float64)) * 2 - 1) * math.pi
        return input_transform(angle=angle), partial(rotate, angle=angle), partial(pseudo_rotate, angle=angle)
    t = ((torch.rand(2, generator=gen, dtype=torch.float64) * 2 - 1) * TRANSLATE_MAX).tolist()
    if kind == "eqt_int":
        t = [round(v * resolution) / resolution for v in t]
        return input_transform(translate=t), partial(translate_integer, tx=t[0], ty=t[1]), _unchanged
    return input_transform(translate=t), partial(translate_fractional, tx=t[0], ty=t[1]), _unchanged


def _batch_errors(G, z, c, drawn) -> torch.Tensor:
    """[sum of masked squared errors, sum of the mask] over a batch, float64."""
    ws = G.mapping(z, c)
    original = G.synthesis(ws, noise_mode="const")
    transforms = torch.stack([transform for transform, _, _ in drawn]).to(z.device)
    moved = G.synthesis(ws, noise_mode="const", transform=transforms)
    totals = torch.zeros(2, dtype=torch.float64, device=z.device)
    for i, (_, reference_op, candidate_op) in enumerate(drawn):
        reference, mask = reference_op(original[i : i + 1])
        candidate, candidate_mask = candidate_op(moved[i : i + 1])
        mask = mask * candidate_mask
        totals += torch.stack([((reference - candidate).square() * mask).sum().double(), mask.sum().double()])
    return totals


def _check_generator(G, name: str) -> None:
    if G is None:
        raise UserError(f"--metrics: {name} measures a generator; pass --network SNAPSHOT instead of --fake images")
    if "transform" not in inspect.signature(G.synthesis.forward).parameters:
        raise UserError(
            f"--network: {name} needs a generator with an input transform (StyleGAN3); this {type(G).__name__} has none"
        )


def _labels(G, positions: list[int], seed: int) -> torch.Tensor:
    """One-hot classes drawn uniformly (the metric sees no dataset), [N, c_dim]."""
    c = torch.zeros(len(positions), G.c_dim)
    for row, p in enumerate(positions):
        if G.c_dim > 0:
            c[row, int(torch.randint(G.c_dim, (), generator=position_rng(seed, "c", p)))] = 1
    return c


def equivariance(ev, kind: str, num_gen: int) -> dict | None:
    """The PSNR of one kind ("eqt_int", "eqt_frac", "eqr") over `num_gen` samples of ev.generator (collective)."""
    G = ev.generator
    _check_generator(G, {"eqt_int": "eqt50k_int", "eqt_frac": "eqt50k_frac", "eqr": "eqr50k"}[kind])
    count, opts = ev.fake_count(num_gen), ev.options
    totals = torch.zeros(2, dtype=torch.float64, device=ev.device)
    chunks = torch.arange(dist.rank(), count, dist.world_size()).split(opts.batch_size)
    what = f"metrics: {kind} on {count} generated images and their transformed copies"
    for chunk in progress(iter(chunks), count, what, opts.progress, source=None, work=None):
        positions = chunk.tolist()
        z = torch.stack([torch.randn(G.z_dim, generator=position_rng(opts.seed, "z", p)) for p in positions])
        drawn = [draw(kind, opts.seed, p, G.resolution) for p in positions]
        with torch.no_grad():
            totals += _batch_errors(G, z.to(ev.device), _labels(G, positions, opts.seed).to(ev.device), drawn)
    dist.all_reduce_sum_(totals)
    if not dist.is_main():
        return None
    return {"value": psnr(float(totals[0]), float(totals[1])), "num_real": 0, "num_fake": count}


def eqt_int(ev, num_real, num_gen):
    return equivariance(ev, "eqt_int", num_gen)


def eqt_frac(ev, num_real, num_gen):
    return equivariance(ev, "eqt_frac", num_gen)


def eqr(ev, num_real, num_gen):
    return equivariance(ev, "eqr", num_gen)
