"""Triton kernels for the fused ops (`TRITON_OPS`): compiled at run time for the GPU, no build step. Written from the
maths of the reference functions in nets/layers.py and nets/filtered_lrelu.py, which the tests compare them with (on
CPU, through Triton's interpreter, TRITON_INTERPRET=1, which must be set before this module is imported; the
kernels use only Triton's builtins, not the library functions it defines with @triton.jit (tl.zeros, tl.cdiv), so
that they run interpreted even where `triton` itself was imported before the switch was set).

- bias_act (here): y = clamp(act(x + b) * gain, -clamp, clamp) in one pass; its derivative dy * gain * act'(x + b)
  * [|act(x + b) * gain| <= clamp] in one pass too, recomputed from x and b (the masks are not stored).
- upfirdn2d (nets/triton_upfirdn2d.py): upsample by zero insertion, pad, convolve with a FIR filter, keep every
  down-th sample; one output sample per lane, reading only the taps that meet a non-inserted sample (1/up^2 of
  them). The StyleGAN2 resamplers below are calls of it.
- filtered_lrelu (nets/triton_filtered_lrelu.py): StyleGAN3's nonlinearity as upfirdn2d calls, the bias, leaky
  ReLU and clamp folded into the upsampling one, which keeps a one-byte mask per upsampled sample for backward.

Each derivative is an autograd Function of the same kind whose own derivative is known, so gradients of gradients
(R1, path length) run these kernels too: bias_act's derivative is linear in dy with a piecewise-constant factor,
upfirdn2d's adjoint is another upfirdn2d (down and up swapped, the filter flipped), and filtered_lrelu with its mask
fixed is a linear map whose adjoint is upfirdn2d calls with the mask's factor between them.
"""

import torch
import triton
import triton.language as tl

from ganforge.nets.ops import LRELU_SLOPE, FusedOps
from ganforge.nets.triton_filtered_lrelu import filtered_lrelu
from ganforge.nets.triton_upfirdn2d import accumulator, exact_dtype, grid_and_block, upfirdn2d

# --- bias + activation + gain + clamp ----------------------------------------------------------------------------


@triton.jit
def _bias_act_kernel(x_ptr, b_ptr, dy_ptr, out_ptr, constants_ptr, numel, channels, inner,
                     HAS_BIAS: tl.constexpr, LRELU: tl.constexpr, HAS_CLAMP: tl.constexpr,
                     GRAD: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    """out = clamp(act(x + b) * gain) (GRAD False), or its derivative times dy (GRAD True). x [outer, channels,
    inner] flattened; b [channels]; constants (gain, slope, clamp) in the accumulator's type (a float argument
    would be float32, which float64 tensors must not see)."""
    gain, slope, clamp = tl.load(constants_ptr), tl.load(constants_ptr + 1), tl.load(constants_ptr + 2)
    # int64: G's 1024^2 activations pass 2^31 elements from a batch of 64 (32 channels), where int32 offsets wrap
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    valid = offsets < numel
    z = tl.load(x_ptr + offsets, mask=valid).to(ACC)
    if HAS_BIAS:
        z += tl.load(b_ptr + (offsets // inner) % channels, mask=valid).to(ACC)
    # leaky ReLU passes slope * dy where z <= 0, as torch's (its derivative at 0 is the slope)
    factor = tl.where(z > 0, 1.0, slope).to(ACC) if LRELU else tl.full(z.shape, 1.0, ACC)
    y = z * factor * gain
    if GRAD:
        if HAS_CLAMP:  # torch.clamp passes the gradient where -clamp <= y <= clamp
            factor = tl.where(tl.abs(y) <= clamp, factor, 0.0)
        out = tl.load(dy_ptr + offsets, mask=valid).to(ACC) * factor * gain
    else:
        out = tl.minimum(tl.maximum(y, -clamp), clamp) if HAS_CLAMP else y
    tl.store(out_ptr + offsets, out.to(out_ptr.dtype.element_ty), mask=valid)


def _launch_bias_act(x, b, dy, act, gain, clamp):
    """The forward (dy None) or the derivative times dy, as a new tensor shaped like x."""
    x = x.contiguous()
    source = x if dy is None else dy.contiguous()
    out = torch.empty_like(source)
    inner = x[0, 0].numel() if x.ndim > 1 and x.shape[0] and x.shape[1] else 1
    channels = x.shape[1] if x.ndim > 1 else 1
    bias = x if b is None else b.to(x.dtype).contiguous()
    constants = torch.tensor([gain, LRELU_SLOPE, clamp or 0], dtype=exact_dtype(x.dtype))
    constants = constants.to(x.device, non_blocking=True)  # the host does not wait for the device
    grid, block = grid_and_block(x.numel())
    _bias_act_kernel[grid](
        x, bias, source, out, constants, x.numel(), channels, inner,
        HAS_BIAS=b is not None, LRELU=act == "lrelu", HAS_CLAMP=clamp is not None, GRAD=dy is not None,
        ACC=accumulator(x.dtype), BLOCK=block,
    )  # fmt: skip
    return out


class _BiasAct(torch.autograd.Function):
    """bias_act; keeps x and b (as the reference's autograd does) and recomputes the masks in backward."""

    @staticmethod
    def forward(ctx, x, b, act, gain, clamp):
        ctx.save_for_backward(x, b)
        ctx.args = (act, gain, clamp)
        return _launch_bias_act(x, b, None, act, gain, clamp)

    @staticmethod
    def backward(ctx, dy):
        x, b = ctx.saved_tensors
        dx = _BiasActGrad.apply(dy, x, b, *ctx.args)
        db = None if b is None or not ctx.needs_input_grad[1] else dx.sum(dim=[0, *range(2, dx.ndim)]).to(b.dtype)
        return dx, db, None, None, None


class _BiasActGrad(torch.autograd.Function):
    """dx = dy * gain * act'(x + b) * [not clamped]: linear in dy, with a factor that is constant almost everywhere
    in x and b, so its own derivative is the same product with the incoming gradient, and zero for x and b."""

    @staticmethod
    def forward(ctx, dy, x, b, act, gain, clamp):
        ctx.save_for_backward(x, b)
        ctx.args = (act, gain, clamp)
        return _launch_bias_act(x, b, dy, act, gain, clamp)

    @staticmethod
    def backward(ctx, ddx):
        x, b = ctx.saved_tensors
        return _BiasActGrad.apply(ddx, x, b, *ctx.args), None, None, None, None, None


def bias_act(x: torch.Tensor, b: torch.Tensor | None, act: str, gain: float, clamp: float | None) -> torch.Tensor:
    """nets.layers.bias_act in one Triton pass (forward and backward)."""
    assert act in ("lrelu", "linear"), act
    return _BiasAct.apply(x, b, act, gain, clamp)


# --- resampling ------------------------------------------------------------------------------------------------


def fir_filter(x: torch.Tensor, f: torch.Tensor, pad: int, gain: float = 1.0) -> torch.Tensor:
    """nets.layers.fir_filter: pad every side, convolve with f * gain."""
    return upfirdn2d(x, f * gain, padding=(pad, pad, pad, pad))


def upsample2d(x: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
    """nets.layers.upsample2d: zero insertion, pad (2, 1), the filter with gain 4 (a constant keeps its value)."""
    return upfirdn2d(x, f * 4, up=2, padding=(2, 1, 2, 1))


def downsample2d(x: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
    """nets.layers.downsample2d: pad 1 on each side, filter, keep every second sample."""
    return upfirdn2d(x, f, down=2, padding=(1, 1, 1, 1))


TRITON_OPS = FusedOps("triton", bias_act, fir_filter, upsample2d, downsample2d, filtered_lrelu)
