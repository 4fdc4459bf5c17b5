"""StyleGAN3's filtered leaky ReLU (Karras et al. 2021, Sec. 3.2, Fig. 4b) in Triton kernel calls, written from
the maths of the reference, nets/filtered_lrelu.py, which the tests compare it with.

Not fused into one kernel, by choice: a program that computed output samples straight from the input would
recompute each upsampled sample for every output the downsampling filter reaches it from ((taps / down)^2 times:
36 for StyleGAN3's 12-tap filters at 2x), and Triton offers no shared memory to keep them in. So the upsampled
signal is written once, in the input's dtype, by the call that makes it, and read by the downsampling calls:

- upsampling: upfirdn2d with the bias added to the input's samples and, in the epilogue, leaky ReLU, gain (on the
  filter: leaky ReLU commutes with a positive gain) and the clamp, which also writes a one-byte mask per upsampled
  sample (bit 0: the sign, bit 1: inside the clamp) for the derivative; the reference keeps two bool tensors.
- downsampling: upfirdn2d with the downsampling filter, keeping every down-th sample.
A separable (1-D) filter runs as two passes, along the rows and then the columns (2 * taps / up products per sample
instead of (taps / up)^2); a 2-D one (config R's radial filter) as one.

With its mask fixed the nonlinearity is a linear map L(x) = firdown(m * upfir(x)); its backward is L's adjoint
L^T(g) = upfir^T(m * firdown^T(g)), the passes transposed in reverse order with the mask's factor (1 or the slope by
the sign, 0 where clamped) on the upsampled grid, and the bias's gradient the sum of the input's. The derivative of
L^T is L and that of L is L^T, one autograd Function, so gradients of gradients (path length) run the kernels too.
"""

import torch

from ganforge.nets.ops import LRELU_GAIN
from ganforge.nets.triton_upfirdn2d import Pass, exact_dtype, launch


def _passes(f, up: int, down: int, padding, scale: float, like: torch.Tensor) -> list[Pass]:
    """The upfirdn2d passes of one resampling by f times `scale`: one with a 2-D filter (None: the 1x1 filter
    [[scale]]), two with a separable one, rows then columns, each with its axis's factors and padding."""
    exact = exact_dtype(like.dtype)
    if f is None or f.ndim == 2:
        f = torch.ones([1, 1], device=like.device) if f is None else f
        return [Pass(f.to(like.device, exact) * scale, (up, up), (down, down), tuple(padding))]
    px0, px1, py0, py1 = padding
    f = f.to(like.device, exact)
    return [Pass(f[:, None] * scale, (up, 1), (down, 1), (0, 0, py0, py1)),
            Pass(f[None, :], (1, up), (1, down), (px0, px1, 0, 0))]  # fmt: skip


def _activate(x, b, upsampling: list[Pass], downsampling: list[Pass], slope, clamp, save_mask: bool):
    """The forward -> (output, the upsampled signal's mask or None): the bias in the first upsampling pass, the
    activation in the last."""
    mask, last = None, len(upsampling) - 1
    for i, p in enumerate(upsampling):
        x, mask = launch(x, p, b if i == 0 else None, activate=i == last, save_mask=save_mask and i == last,
                         slope=slope, clamp=clamp)  # fmt: skip
    for p in downsampling:
        x = launch(x, p)[0]
    return x, mask


def _masked_linear(t, upsampling, downsampling, mask, slope, size, transpose: bool) -> torch.Tensor:
    """L(t) (transpose False) or L^T(t) for the mask m of the upsampled signal; `size`: L's input size."""
    if not transpose:
        for i, p in enumerate(upsampling):
            t = launch(t, p, mask=mask if i == len(upsampling) - 1 else None, slope=slope)[0]
        for p in downsampling:
            t = launch(t, p)[0]
        return t
    sizes = [tuple(size)]
    for p in upsampling + downsampling:
        sizes.append(p.output_size(sizes[-1]))
    adjoints = [p.adjoint(s) for p, s in zip(upsampling + downsampling, sizes[:-1], strict=True)][::-1]
    for i, p in enumerate(adjoints):  # the last of firdown^T's passes makes the upsampled grid, where m applies
        t = launch(t, p, mask=mask if i == len(downsampling) - 1 else None, slope=slope)[0]
    return t


class _MaskedLinear(torch.autograd.Function):
    """L or L^T as a Function whose derivative is the other: every order of derivative runs the kernels."""

    @staticmethod
    def forward(ctx, t, mask, upsampling, downsampling, slope, size, transpose):
        ctx.save_for_backward(mask)
        ctx.args = (upsampling, downsampling, slope, size, transpose)
        return _masked_linear(t, upsampling, downsampling, mask, slope, size, transpose)

    @staticmethod
    def backward(ctx, g):
        (mask,) = ctx.saved_tensors
        upsampling, downsampling, slope, size, transpose = ctx.args
        g = _MaskedLinear.apply(g, mask, upsampling, downsampling, slope, size, not transpose)
        return g, None, None, None, None, None, None


class _FilteredLReLU(torch.autograd.Function):
    """Autograd keeps the one-byte mask of the upsampled signal (and the constant filters), nothing else."""

    @staticmethod
    def forward(ctx, x, b, upsampling, downsampling, slope, clamp):
        y, mask = _activate(x, b, upsampling, downsampling, slope, clamp, save_mask=True)
        ctx.save_for_backward(mask)
        ctx.args = (upsampling, downsampling, slope, x.shape[2:])
        ctx.b_dtype = None if b is None else b.dtype
        return y

    @staticmethod
    def backward(ctx, dy):
        (mask,) = ctx.saved_tensors
        dx = _MaskedLinear.apply(dy, mask, *ctx.args, True)
        db = dx.sum(dim=[0, 2, 3]).to(ctx.b_dtype) if ctx.needs_input_grad[1] else None
        return dx, db, None, None, None, None


def filtered_lrelu(x, fu=None, fd=None, b=None, up=1, down=1, padding=(0, 0, 0, 0), gain=LRELU_GAIN, slope=0.2,
                   clamp=None) -> torch.Tensor:  # fmt: skip
    """nets.filtered_lrelu.filtered_lrelu, the same arguments and output (layout included), by the Triton kernels."""
    assert (fu is not None or up == 1) and (fd is not None or down == 1), "resampling needs a filter"
    with torch.profiler.record_function("filtered_lrelu"):  # named in profiles, as the reference is
        channels_last = x.is_contiguous(memory_format=torch.channels_last) and not x.is_contiguous()
        # the upsampling filter carries the reference's gain * up^2 (a constant keeps its value times the gain)
        upsampling = _passes(fu, up, 1, padding, gain * up * up, x)
        downsampling = _passes(fd, 1, down, (0, 0, 0, 0), 1.0, x)
        if torch.is_grad_enabled() and (x.requires_grad or (b is not None and b.requires_grad)):
            y = _FilteredLReLU.apply(x, b, upsampling, downsampling, slope, clamp)
        else:
            y = _activate(x, b, upsampling, downsampling, slope, clamp, save_mask=False)[0]
        return y.contiguous(memory_format=torch.channels_last) if channels_last else y
