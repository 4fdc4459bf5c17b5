"""The numerical pieces of ADA augmentation (Karras et al. 2020, arXiv:2006.06676, appendix B), as pure functions.

Each `*_matrices` function draws one batch of random transformation parameters and composes the enabled transforms of
its group into one matrix per sample; a transform that is not applied to a sample (probability 1 - p) contributes
exactly the identity, so an untouched sample's matrix is bitwise the identity. The `apply_*` functions apply those
matrices. All randomness comes from torch's RNG on the images' device, or from `generator` when one is given.

Coordinates: x is the column, y the row, both measured in pixels from the image centre (pixel i's centre is at
i + 0.5 - size / 2), so the geometric matrices are resolution independent and rotate without shear on square images.
"""

import math

import torch
import torch.nn.functional as F

# Parameter distributions of appendix B (figure 24's "blit", "geom" and "color" groups), with strength 1.
INT_TRANSLATE_MAX = 0.125  # integer translation: t ~ U(-0.125, 0.125) of the image size, rounded to whole pixels
SCALE_LOG2_STD = 0.2  # isotropic and anisotropic scaling: s ~ lognormal(0, (0.2 ln 2)^2)
FRAC_TRANSLATE_STD = 0.125  # fractional translation: t ~ N(0, 0.125^2) of the image size
BRIGHTNESS_STD = 0.2  # brightness: b ~ N(0, 0.2^2), added to every channel
CONTRAST_LOG2_STD = 0.5  # contrast: c ~ lognormal(0, (0.5 ln 2)^2)
SATURATION_LOG2_STD = 1.0  # saturation: s ~ lognormal(0, (1 ln 2)^2)
LUMA_AXIS = (1 / math.sqrt(3),) * 3  # v = (1, 1, 1) / sqrt(3), the paper's luma axis

LANCZOS_TAPS = 12  # 2x-oversampling filter length (the paper's sym6 wavelet filter also has 12 taps)


def constant(values, device: torch.device) -> torch.Tensor:
    """A small float32 table on `device`, copied there without the host waiting (torch.tensor(..., device=) makes a
    blocking copy, which on CUDA waits for the device to finish its queue)."""
    return torch.tensor(values, dtype=torch.float32).to(device, non_blocking=True)


def draw_gate(n: int, p: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """One Bernoulli(p) draw per sample: whether this transform (or corruption) is applied to it."""
    return torch.rand(n, device=p.device, generator=generator) < p


def _lognormal(n: int, log2_std: float, gate: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """exp(N(0, (log2_std ln 2)^2)) where gated, exactly 1 elsewhere."""
    value = torch.exp2(torch.randn(n, device=gate.device, generator=generator) * log2_std)
    return torch.where(gate, value, torch.ones_like(value))


def _eye(n: int, size: int, device: torch.device) -> torch.Tensor:
    return torch.eye(size, device=device).expand(n, size, size).clone()


def _affine2d(a, b, c, d, tx, ty) -> torch.Tensor:
    """Batch of 3x3 homogeneous matrices [[a, b, tx], [c, d, ty], [0, 0, 1]] from [N] tensors."""
    zero, one = torch.zeros_like(a), torch.ones_like(a)
    return torch.stack([a, b, tx, c, d, ty, zero, zero, one], dim=1).reshape(-1, 3, 3)


def _rotate2d(cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    return _affine2d(cos, -sin, sin, cos, torch.zeros_like(cos), torch.zeros_like(cos))


def _scale2d(sx: torch.Tensor, sy: torch.Tensor) -> torch.Tensor:
    return _affine2d(sx, torch.zeros_like(sx), torch.zeros_like(sx), sy, torch.zeros_like(sx), torch.zeros_like(sx))


def _translate2d(tx: torch.Tensor, ty: torch.Tensor) -> torch.Tensor:
    one, zero = torch.ones_like(tx), torch.zeros_like(tx)
    return _affine2d(one, zero, zero, one, tx, ty)


def blit_matrices(ops, n, height, width, p, generator=None) -> torch.Tensor:
    """Inverse (output -> input) pixel maps of the "blit" group in doubled centred coordinates, [N, 3, 3] float.

    Doubling (u = 2 * column + 1 - width) makes every pixel centre an integer, so the map is exact integer arithmetic.
    Composition order is the paper's: x-flip, 90-degree rotation, integer translation; the inverse of T3 T2 T1 is
    accumulated as T1^-1 T2^-1 T3^-1.
    """
    inverse = _eye(n, 3, p.device)
    if "xflip" in ops:
        flip = draw_gate(n, p, generator) & (torch.randint(2, (n,), device=p.device, generator=generator) == 1)
        sx = torch.where(flip, -1.0, 1.0)
        inverse = inverse @ _scale2d(sx, torch.ones_like(sx))
    if "rotate90" in ops:
        turns = torch.randint(4, (n,), device=p.device, generator=generator)
        if height != width:  # a quarter turn would not fit a non-square frame: half turns only, as often
            turns = turns // 2 * 2
        turns = torch.where(draw_gate(n, p, generator), turns, torch.zeros_like(turns))
        # Exact integer cos/sin of -turns * 90 degrees (the inverse rotation).
        cos = constant([1.0, 0.0, -1.0, 0.0], p.device)[turns]
        sin = constant([0.0, -1.0, 0.0, 1.0], p.device)[turns]
        inverse = inverse @ _rotate2d(cos, sin)
    if "xint" in ops:
        gate = draw_gate(n, p, generator)
        t = (torch.rand(n, 2, device=p.device, generator=generator) * 2 - 1) * INT_TRANSLATE_MAX
        t = torch.where(gate[:, None], t, torch.zeros_like(t))
        tx, ty = torch.round(t[:, 0] * width), torch.round(t[:, 1] * height)
        inverse = inverse @ _translate2d(-2 * tx, -2 * ty)
    return inverse


def geometric_matrices(ops, n, height, width, p, generator=None) -> torch.Tensor:
    """Inverse (output -> input) maps of the "geom" group in centred pixel units, [N, 3, 3] float32.

    Order as in appendix B: isotropic scale, pre-rotation, anisotropic scale, post-rotation, fractional translation.
    Each rotation is applied with probability 1 - sqrt(1 - p), so that some rotation happens with probability p.
    """
    inverse = _eye(n, 3, p.device)
    p_rot = 1 - torch.sqrt((1 - p).clamp(min=0))
    for op in ("scale", "rotate_pre", "aniso", "rotate_post", "xfrac"):
        if op.startswith("rotate") and "rotate" in ops:
            gate = draw_gate(n, p_rot, generator)
            theta = (torch.rand(n, device=p.device, generator=generator) * 2 - 1) * math.pi
            theta = torch.where(gate, theta, torch.zeros_like(theta))
            inverse = inverse @ _rotate2d(torch.cos(-theta), torch.sin(-theta))
        elif op in ("scale", "aniso") and op in ops:
            s = _lognormal(n, SCALE_LOG2_STD, draw_gate(n, p, generator), generator)
            inverse = inverse @ (_scale2d(1 / s, 1 / s) if op == "scale" else _scale2d(1 / s, s))
        elif op == "xfrac" and op in ops:
            gate = draw_gate(n, p, generator)
            t = torch.randn(n, 2, device=p.device, generator=generator) * FRAC_TRANSLATE_STD
            t = torch.where(gate[:, None], t, torch.zeros_like(t))
            inverse = inverse @ _translate2d(-t[:, 0] * width, -t[:, 1] * height)
    return inverse


def _rgb_affine(linear: torch.Tensor, offset: torch.Tensor | None = None) -> torch.Tensor:
    """Embed [N, 3, 3] linear parts (and [N, 3] offsets) into [N, 4, 4] homogeneous colour matrices."""
    out = _eye(linear.shape[0], 4, linear.device)
    out[:, :3, :3] = linear
    if offset is not None:
        out[:, :3, 3] = offset
    return out


def color_matrices(ops, n, channels, p, generator=None) -> torch.Tensor:
    """Forward 4x4 colour matrices of the "color" group acting on (r, g, b, 1), [N, 4, 4] float32.

    Order as in appendix B: brightness, contrast, luma flip, hue rotation, saturation. Hue rotation and saturation
    act only on the chroma plane orthogonal to the luma axis, which a one-channel (grey) image does not have; they are
    exactly the identity there, so for one channel they are skipped (no random numbers drawn).
    """
    dev = p.device
    v = constant(LUMA_AXIS, dev)
    vvt = torch.outer(v, v).expand(n, 3, 3)
    eye3 = torch.eye(3, device=dev).expand(n, 3, 3)
    color = _eye(n, 4, dev)
    if "brightness" in ops:
        b = torch.randn(n, device=dev, generator=generator) * BRIGHTNESS_STD
        b = torch.where(draw_gate(n, p, generator), b, torch.zeros_like(b))
        color = _rgb_affine(eye3, b[:, None].expand(n, 3)) @ color
    if "contrast" in ops:
        c = _lognormal(n, CONTRAST_LOG2_STD, draw_gate(n, p, generator), generator)
        color = _rgb_affine(eye3 * c[:, None, None]) @ color
    if "lumaflip" in ops:
        flip = draw_gate(n, p, generator) & (torch.randint(2, (n,), device=dev, generator=generator) == 1)
        # Householder reflection I - 2 v v^T mirrors colours through the plane orthogonal to the luma axis.
        color = _rgb_affine(eye3 - 2 * vvt * flip[:, None, None]) @ color
    if "hue" in ops and channels == 3:
        theta = (torch.rand(n, device=dev, generator=generator) * 2 - 1) * math.pi
        theta = torch.where(draw_gate(n, p, generator), theta, torch.zeros_like(theta))
        color = _rgb_affine(_rotation_about(v, theta)) @ color
    if "saturation" in ops and channels == 3:
        s = _lognormal(n, SATURATION_LOG2_STD, draw_gate(n, p, generator), generator)
        color = _rgb_affine(vvt + (eye3 - vvt) * s[:, None, None]) @ color
    return color


def _rotation_about(axis: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
    """Rodrigues' formula: rotation by theta [N] about the unit `axis` [3], [N, 3, 3]."""
    x, y, z = axis
    zero = torch.zeros((), device=axis.device)
    cross = torch.stack([zero, -z, y, z, zero, -x, -y, x, zero]).reshape(3, 3)
    cos, sin = torch.cos(theta)[:, None, None], torch.sin(theta)[:, None, None]
    return cos * torch.eye(3, device=axis.device) + sin * cross + (1 - cos) * torch.outer(axis, axis)


def apply_blit(images: torch.Tensor, inverse: torch.Tensor) -> torch.Tensor:
    """Move pixels by the exact integer maps of `blit_matrices`; out-of-image sources mirror about the edge.

    A gather, so values are copied bitwise and gradients flow back to the sources.
    """
    n, c, h, w = images.shape
    ys, xs = torch.meshgrid(torch.arange(h, device=images.device), torch.arange(w, device=images.device), indexing="ij")
    out_uv = torch.stack([2 * xs + 1 - w, 2 * ys + 1 - h, torch.ones_like(xs)]).reshape(3, h * w).float()
    src = torch.round(inverse @ out_uv).long()  # [N, 3, H*W]
    src_x, src_y = _mirror((src[:, 0] + w - 1) // 2, w), _mirror((src[:, 1] + h - 1) // 2, h)
    index = (src_y * w + src_x)[:, None, :].expand(n, c, h * w)
    return images.reshape(n, c, h * w).gather(2, index).reshape(n, c, h, w)


def _mirror(index: torch.Tensor, size: int) -> torch.Tensor:
    """Half-sample symmetric reflection (edge pixel repeated), the continuous image mirrored at its border."""
    index = torch.remainder(index, 2 * size)
    return torch.where(index >= size, 2 * size - 1 - index, index)


def lanczos_filter(taps: int = LANCZOS_TAPS) -> torch.Tensor:
    """Even-length Lanczos low-pass for 2x resampling, unit DC gain, [taps].

    Taps sit at half-sample offsets of the fine grid; a = taps / 4 lobes on the coarse grid (Lanczos-3 for 12 taps).
    """
    assert taps % 4 == 0
    offsets = (torch.arange(taps, dtype=torch.float64) - (taps - 1) / 2) / 2  # in coarse-grid pixels
    f = torch.sinc(offsets) * torch.sinc(offsets / (taps // 4))
    return (f / f.sum()).float()


def _pad_symmetric_last(x: torch.Tensor, pad: int) -> torch.Tensor:
    assert pad <= x.shape[-1], "image too small for the resampling filter"
    return torch.cat([x[..., :pad].flip(-1), x, x[..., -pad:].flip(-1)], dim=-1)


def _fir_last(x: torch.Tensor, f: torch.Tensor, count: int) -> torch.Tensor:
    """Valid 1-D correlation of `x` with `f` along the last dimension, first `count` outputs.

    A sum of shifted slices: O(taps) elementwise passes, which beats conv1d on [rows, 1, width] inputs on CPU.
    """
    out = f[0] * x[..., :count]
    for t in range(1, f.numel()):
        out = out + f[t] * x[..., t : t + count]
    return out


def _upsample2x_last(x: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
    # Polyphase form of zero insertion + filtering with gain 2. Fine pixel j sits at coarse position j / 2 - 1/4 (the
    # pixel-centre convention of grid_sample(align_corners=False)), so even outputs use the even taps and odd outputs
    # the odd taps, over windows one coarse pixel apart.
    taps, size = f.numel(), x.shape[-1]
    xp = _pad_symmetric_last(x, taps // 4)
    f = f.to(x.dtype) * 2
    even, odd = _fir_last(xp, f[0::2], size), _fir_last(xp[..., 1:], f[1::2], size)
    return torch.stack([even, odd], dim=-1).flatten(-2)


def _downsample2x_last(x: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
    # Filtering then keeping every other sample, in polyphase form; padding taps/2 - 1 fine pixels centres output m
    # between fine pixels 2m and 2m + 1.
    xp, f = _pad_symmetric_last(x, f.numel() // 2 - 1), f.to(x.dtype)
    size = x.shape[-1] // 2
    return _fir_last(xp[..., 0::2], f[0::2], size) + _fir_last(xp[..., 1::2], f[1::2], size)


def resample(images: torch.Tensor, inverse: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
    """Warp `images` [N, C, H, W] by inverse maps [N, 3, 3] (centred pixel units) with one band-limited resampling.

    As in appendix B, the image is upsampled 2x with a low-pass filter, warped with bilinear interpolation, low-pass
    filtered and downsampled 2x; mirroring at the border stands in for the paper's reflection padding. We use a
    Lanczos-3 kernel where the paper uses the sym6 wavelet filter; both are 12-tap half-band low-passes.
    """
    n, c, h, w = images.shape
    to_unit = torch.diag(constant([2 / w, 2 / h, 1.0], images.device))
    to_pixels = torch.diag(constant([w / 2, h / 2, 1.0], images.device))
    theta = (to_unit @ inverse @ to_pixels)[:, :2, :].to(images.dtype)  # grid_sample's [-1, 1] coordinates
    up = _upsample2x_last(_upsample2x_last(images, f).transpose(-1, -2), f).transpose(-1, -2)
    grid = F.affine_grid(theta, [n, c, 2 * h, 2 * w], align_corners=False)
    warped = F.grid_sample(up, grid, mode="bilinear", padding_mode="reflection", align_corners=False)
    return _downsample2x_last(_downsample2x_last(warped, f).transpose(-1, -2), f).transpose(-1, -2)


def apply_color(images: torch.Tensor, color: torch.Tensor) -> torch.Tensor:
    """Apply [N, 4, 4] colour matrices to 3-channel images, or their grey equivalent to 1-channel images.

    A grey pixel g stands for (g, g, g); its result is the mean (luma) of the transformed colour.
    """
    linear, offset = color[:, :3, :3].to(images.dtype), color[:, :3, 3].to(images.dtype)
    if images.shape[1] == 3:
        return torch.einsum("nij,njhw->nihw", linear, images) + offset[:, :, None, None]
    gain = linear.sum(dim=2).mean(dim=1)
    return images * gain[:, None, None, None] + offset.mean(dim=1)[:, None, None, None]
