"""The filtered leaky ReLU of the alias-free generator (Karras et al. 2021, Sec. 3.2, Fig. 4b), and its resamplers.

A pointwise nonlinearity creates frequencies above the Nyquist limit, so it is applied at a temporarily higher
sampling rate: add the bias, upsample (zero insertion, then a low-pass FIR), apply leaky ReLU with gain and the
clamp, low-pass filter again and keep every `down`-th sample. Filters follow the signal-processing convention
(true convolution) and are either 1-D (separable: applied along both axes) or 2-D. Everything is built from
grouped `conv_transpose2d` / `conv2d` (one channel per group) so autograd, every device and every dtype work.
"""

import torch
import torch.nn.functional as F

from ganforge.nets.ops import LRELU_GAIN


def _depthwise(f: torch.Tensor, channels: int, axis: int | None, dtype: torch.dtype) -> torch.Tensor:
    """A per-channel kernel [channels, 1, kh, kw]: a 1-D filter along axis 2 (H) or 3 (W), or a 2-D filter."""
    f = f.to(dtype)
    kernel = f if axis is None else f[:, None] if axis == 2 else f[None, :]
    return kernel[None, None].expand(channels, 1, *kernel.shape)


def _upfir_crop(padding, k: int, up: int) -> list[int]:
    """F.pad amounts that turn the full convolution of a stride-`up` transposed convolution into upfir's output."""
    x0, x1, y0, y1 = padding
    return [x0 - k + 1, up + x1 - k, y0 - k + 1, up + y1 - k]


def upfir(x: torch.Tensor, f: torch.Tensor | None, up: int, padding, gain: float = 1.0) -> torch.Tensor:
    """Insert up-1 zeros after every sample, pad (negative: crop) by padding = (left, right, top, bottom), convolve
    with `f` scaled by gain * up**2 (so a constant image keeps its value times `gain`), keeping only outputs whose
    footprint lies inside the padded image. f None is the identity filter (then up must be 1).
    """
    if f is None:
        assert up == 1, "upsampling needs a filter"
        x = F.pad(x, list(padding))
        return x * gain if gain != 1 else x
    c, k = x.shape[1], f.shape[-1]
    # A stride-`up` transposed convolution is zero insertion followed by a *full* convolution ((n-1)*up + k
    # samples); the valid convolution of the padded signal is that, shifted by k-1-pad_lo and cut to length.
    if f.ndim == 2:
        x = F.conv_transpose2d(x, _depthwise(f * (gain * up * up), c, None, x.dtype), stride=up, groups=c)
    else:
        x = F.conv_transpose2d(x, _depthwise(f * (gain * up), c, 2, x.dtype), stride=(up, 1), groups=c)
        x = F.conv_transpose2d(x, _depthwise(f * up, c, 3, x.dtype), stride=(1, up), groups=c)
    return F.pad(x, _upfir_crop(padding, k, up))


def upfir_adjoint(g: torch.Tensor, f: torch.Tensor | None, up: int, padding, gain: float = 1.0) -> torch.Tensor:
    """The transpose of the linear map upfir(., f, up, padding, gain): undo the crop, then strided convolutions."""
    if f is None:
        g = F.pad(g, [-p for p in padding])
        return g * gain if gain != 1 else g
    c, k = g.shape[1], f.shape[-1]
    g = F.pad(g, [-p for p in _upfir_crop(padding, k, up)])
    if f.ndim == 2:
        return F.conv2d(g, _depthwise(f * (gain * up * up), c, None, g.dtype), stride=up, groups=c)
    g = F.conv2d(g, _depthwise(f * up, c, 3, g.dtype), stride=(1, up), groups=c)
    return F.conv2d(g, _depthwise(f * (gain * up), c, 2, g.dtype), stride=(up, 1), groups=c)


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


def firdown_adjoint(g: torch.Tensor, f: torch.Tensor | None, down: int, size: tuple[int, int]) -> torch.Tensor:
    """The transpose of firdown(., f, down) for inputs of spatial `size`: strided transposed convolutions, with
    output padding for the samples a strided convolution never reaches."""
    if f is None:
        return g
    c, k = g.shape[1], f.shape[-1]
    f = f.flip(list(range(f.ndim)))
    extra_h, extra_w = (n - ((m - 1) * down + k) for n, m in zip(size, g.shape[2:], strict=True))
    if f.ndim == 2:
        kernel = _depthwise(f, c, None, g.dtype)
        return F.conv_transpose2d(g, kernel, stride=down, output_padding=(extra_h, extra_w), groups=c)
    g = F.conv_transpose2d(g, _depthwise(f, c, 3, g.dtype), stride=(1, down), output_padding=(0, extra_w), groups=c)
    return F.conv_transpose2d(g, _depthwise(f, c, 2, g.dtype), stride=(down, 1), output_padding=(extra_h, 0), groups=c)


def _forward(x, fu, fd, b, up, down, padding, gain, slope, clamp, masks=False):
    """The filtered lrelu, and with `masks` what its derivative needs: (output, size before downsampling,
    pre-activation >= 0 or None, not clamped or None)."""
    if b is not None:
        x = x + b.to(x.dtype).reshape(1, -1, 1, 1)
    # lrelu(g * v) = g * lrelu(v) for g > 0, so the gain rides on the upsampling filter instead of a full pass
    x = upfir(x, fu, up, padding, gain=gain)
    positive = inside = None
    if slope != 1:
        positive = x >= 0 if masks else None
        x = F.leaky_relu(x, slope)
    if clamp is not None:
        inside = x.abs() <= clamp if masks else None  # torch.clamp passes the gradient where min <= x <= max
        x = x.clamp(-clamp, clamp)
    return firdown(x, fd, down), x.shape[2:], positive, inside


class _FilteredLReLU(torch.autograd.Function):
    """Autograd keeps only two boolean masks of the upsampled signal (and the filters), not the four float copies
    a composition of differentiable ops would save: backward is the transposed filters around the masks. Its
    backward is itself made of differentiable ops, so higher-order gradients work (the masks are constant)."""

    @staticmethod
    def forward(ctx, x, b, fu, fd, up, down, padding, gain, slope, clamp):
        y, size, positive, inside = _forward(x, fu, fd, b, up, down, padding, gain, slope, clamp, masks=True)
        ctx.save_for_backward(fu, fd, positive, inside)
        ctx.args = (up, down, padding, gain, slope, size)
        # the incoming gradient gets the output's memory layout: mixed layouts take slow elementwise and conv paths
        ctx.layout = (
            torch.channels_last
            if x.dim() == 4 and not x.is_contiguous() and x.is_contiguous(memory_format=torch.channels_last)
            else torch.contiguous_format
        )
        return y

    @staticmethod
    def backward(ctx, grad):
        fu, fd, positive, inside = ctx.saved_tensors
        up, down, padding, gain, slope, size = ctx.args
        g = firdown_adjoint(grad.contiguous(memory_format=ctx.layout), fd, down, size)
        if positive is not None:
            g = torch.where(positive, g, g * slope)
        if inside is not None:
            g = torch.where(inside, g, 0.0)
        gx = upfir_adjoint(g, fu, up, padding, gain)
        gb = gx.sum(dim=[0, 2, 3]) if ctx.needs_input_grad[1] else None
        return gx, gb, None, None, None, None, None, None, None, None


def filtered_lrelu(
    x, fu=None, fd=None, b=None, up=1, down=1, padding=(0, 0, 0, 0), gain=LRELU_GAIN, slope=0.2, clamp=None
) -> torch.Tensor:
    """bias -> upfir(fu, up, padding) -> leaky ReLU(slope) * gain -> clamp to +-clamp -> firdown(fd, down).

    x [N, C, H, W]; fu, fd: None, [taps] (separable) or [taps, taps]; b [C] or None; padding (left, right, top,
    bottom) in upsampled samples. Output [N, C, (H*up + pad - (fu_taps-1) - (fd_taps-1) + down-1) // down, ...].
    slope=1, gain=1 makes it a linear filter (the toRGB layer). With gradients enabled, a memory-lean autograd
    function; without (inference, export), the plain ops.
    """
    with torch.profiler.record_function("filtered_lrelu"):  # the generator's hot spot: named in profiles
        padding = tuple(padding)
        if torch.is_grad_enabled() and (x.requires_grad or (b is not None and b.requires_grad)):
            return _FilteredLReLU.apply(x, b, fu, fd, up, down, padding, gain, slope, clamp)
        return _forward(x, fu, fd, b, up, down, padding, gain, slope, clamp)[0]
