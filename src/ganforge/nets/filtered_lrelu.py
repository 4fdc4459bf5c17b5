"""The filtered leaky ReLU of the alias-free generator (Karras et al. 2021, Sec. 3.2, Fig. 4b), and its resamplers.

A pointwise nonlinearity creates frequencies above the Nyquist limit, so it is applied at a temporarily higher
sampling rate: add the bias, upsample (zero insertion, then a low-pass FIR), apply leaky ReLU with gain and the
clamp, low-pass filter again and keep every `down`-th sample. Filters follow the signal-processing convention
(true convolution) and are either 1-D (separable: applied along both axes) or 2-D. Everything is built from
grouped `conv_transpose2d` / `conv2d` (one channel per group) so autograd, every device and every dtype work.
"""

import torch
import torch.nn.functional as F

from ganforge.nets.layers import LRELU_GAIN


def _depthwise(f: torch.Tensor, channels: int, axis: int | None, dtype: torch.dtype) -> torch.Tensor:
    """A per-channel kernel [channels, 1, kh, kw]: a 1-D filter along axis 2 (H) or 3 (W), or a 2-D filter."""
    f = f.to(dtype)
    kernel = f if axis is None else f[:, None] if axis == 2 else f[None, :]
    return kernel[None, None].expand(channels, 1, *kernel.shape)


def upfir(x: torch.Tensor, f: torch.Tensor | None, up: int, padding, gain: float = 1.0) -> torch.Tensor:
    """Insert up-1 zeros after every sample, pad (negative: crop) by padding = (left, right, top, bottom), convolve
    with `f` scaled by gain * up**2 (so a constant image keeps its value times `gain`), keeping only outputs whose
    footprint lies inside the padded image. f None is the identity filter (then up must be 1).
    """
    x0, x1, y0, y1 = padding
    if f is None:
        assert up == 1, "upsampling needs a filter"
        return F.pad(x, [x0, x1, y0, y1]) * gain if gain != 1 else F.pad(x, [x0, x1, y0, y1])
    c, k = x.shape[1], f.shape[-1]
    # A stride-`up` transposed convolution is zero insertion followed by a *full* convolution ((n-1)*up + k
    # samples); the valid convolution of the padded signal is that, shifted by k-1-pad_lo and cut to length.
    if f.ndim == 2:
        x = F.conv_transpose2d(x, _depthwise(f * (gain * up * up), c, None, x.dtype), stride=up, groups=c)
        return F.pad(x, [x0 - k + 1, up + x1 - k, y0 - k + 1, up + y1 - k])
    x = F.conv_transpose2d(x, _depthwise(f * (gain * up), c, 2, x.dtype), stride=(up, 1), groups=c)
    x = F.conv_transpose2d(x, _depthwise(f * up, c, 3, x.dtype), stride=(1, up), groups=c)
    return F.pad(x, [x0 - k + 1, up + x1 - k, y0 - k + 1, up + y1 - k])


def firdown(x: torch.Tensor, f: torch.Tensor | None, down: int) -> torch.Tensor:
    """Valid convolution with `f` (1-D separable or 2-D), then keep every `down`-th sample from the first.

    conv2d correlates, so the filter is flipped; a strided convolution computes only the samples that are kept.
    """
    if f is None:
        assert down == 1, "downsampling needs a filter"
        return x
    c = x.shape[1]
    f = f.flip(list(range(f.ndim)))
    if f.ndim == 2:
        return F.conv2d(x, _depthwise(f, c, None, x.dtype), stride=down, groups=c)
    x = F.conv2d(x, _depthwise(f, c, 2, x.dtype), stride=(down, 1), groups=c)
    return F.conv2d(x, _depthwise(f, c, 3, x.dtype), stride=(1, down), groups=c)


def filtered_lrelu(x, fu=None, fd=None, b=None, up=1, down=1, padding=(0, 0, 0, 0), gain=LRELU_GAIN, slope=0.2,
                   clamp=None) -> torch.Tensor:  # fmt: skip
    """bias -> upfir(fu, up, padding) -> leaky ReLU(slope) * gain -> clamp to +-clamp -> firdown(fd, down).

    x [N, C, H, W]; fu, fd: None, [taps] (separable) or [taps, taps]; b [C] or None; padding (left, right, top,
    bottom) in upsampled samples. Output [N, C, (H*up + pad - (fu_taps-1) - (fd_taps-1) + down-1) // down, ...].
    slope=1, gain=1 makes it a linear filter (the toRGB layer).
    """
    with torch.profiler.record_function("filtered_lrelu"):  # the generator's hot spot: named in profiles
        if b is not None:
            x = x + b.to(x.dtype).reshape(1, -1, 1, 1)
        # lrelu(g * v) = g * lrelu(v) for g > 0, so the gain rides on the upsampling filter instead of a full pass
        x = upfir(x, fu, up, padding, gain=gain)
        if slope != 1:
            x = F.leaky_relu(x, slope)
        if clamp is not None:
            x = x.clamp(-clamp, clamp)
        return firdown(x, fd, down)
