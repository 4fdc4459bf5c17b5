"""Triton kernels for the fused ops (`TRITON_OPS`): compiled at run time for the GPU, no build step. Written from the
maths of the reference functions in nets/layers.py, which the tests compare them with (on CPU, through Triton's
interpreter, TRITON_INTERPRET=1, which must be set before this module is imported; the kernels use only Triton's
builtins, not the library functions it defines with @triton.jit (tl.zeros, tl.cdiv), so that they run interpreted
even where `triton` itself was imported before the switch was set).

- bias_act: y = clamp(act(x + b) * gain, -clamp, clamp) in one pass; its derivative dy * gain * act'(x + b) *
  [|act(x + b) * gain| <= clamp] in one pass too, recomputed from x and b (the masks are not stored).
- upfirdn2d: upsample by zero insertion, pad, convolve with a 2-D FIR filter, keep every down-th sample; one
  output sample per lane, reading only the taps that meet a non-inserted sample (1/up^2 of them).

Each derivative is an autograd Function of the same kind whose own derivative is known, so gradients of gradients
(R1, path length) run these kernels too: bias_act's derivative is linear in dy with a piecewise-constant factor, and
upfirdn2d's adjoint is another upfirdn2d (down and up swapped, the filter flipped).
"""

import torch
import triton
import triton.language as tl

from ganforge.nets.layers import LRELU_SLOPE
from ganforge.nets.ops import FusedOps

BLOCK = 1024  # elements per program: a multiple of the warp size that keeps the loads of a program coalesced


def _accumulator(dtype: torch.dtype):
    """float64 sums for float64 tensors (gradcheck), float32 for the rest (fp16 and bf16 round once, at the end)."""
    return tl.float64 if dtype == torch.float64 else tl.float32


def _grid(numel: int) -> tuple[int]:
    return (triton.cdiv(numel, BLOCK),)


# --- bias + activation + gain + clamp ----------------------------------------------------------------------------


@triton.jit
def _bias_act_kernel(x_ptr, b_ptr, dy_ptr, out_ptr, constants_ptr, numel, channels, inner,
                     HAS_BIAS: tl.constexpr, LRELU: tl.constexpr, HAS_CLAMP: tl.constexpr,
                     GRAD: tl.constexpr, ACC: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    """out = clamp(act(x + b) * gain) (GRAD False), or its derivative times dy (GRAD True). x [outer, channels,
    inner] flattened; b [channels]; constants (gain, slope, clamp) in the accumulator's type (a float argument
    would be float32, which float64 tensors must not see)."""
    gain, slope, clamp = tl.load(constants_ptr), tl.load(constants_ptr + 1), tl.load(constants_ptr + 2)
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
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
    exact = torch.float64 if x.dtype == torch.float64 else torch.float32
    constants = torch.tensor([gain, LRELU_SLOPE, clamp or 0], dtype=exact, device=x.device)
    _bias_act_kernel[_grid(x.numel())](
        x, bias, source, out, constants, x.numel(), channels, inner,
        HAS_BIAS=b is not None, LRELU=act == "lrelu", HAS_CLAMP=clamp is not None, GRAD=dy is not None,
        ACC=_accumulator(x.dtype), BLOCK=BLOCK,
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


# --- upfirdn2d ---------------------------------------------------------------------------------------------------


@triton.jit
def _upfirdn2d_kernel(x_ptr, f_ptr, y_ptr, numel, in_h, in_w, out_h, out_w, taps_h, taps_w, up, down, pad_y, pad_x,
                      rows, cols, ACC: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    """y[p, oy, ox] = sum_{ky, kx} u[oy * down + ky - pad_y, ox * down + kx - pad_x] f[taps_h-1-ky, taps_w-1-kx],
    where u is x with up-1 zeros inserted after each sample (u[i * up] = x[i]): a true convolution of the padded,
    upsampled signal, sampled every `down`. Only taps ky = phase + t * up meet a sample of x: `rows` and `cols`
    (ceil(taps / up)) per axis."""
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    valid = offsets < numel
    ox = offsets % out_w
    oy = (offsets // out_w) % out_h
    plane = offsets // (out_w * out_h)
    base_y, base_x = oy * down - pad_y, ox * down - pad_x  # position in u of tap 0
    phase_y = ((-base_y) % up + up) % up  # the first tap with (base + tap) divisible by up
    phase_x = ((-base_x) % up + up) % up
    acc = tl.full([BLOCK], 0, ACC)
    for ty in range(0, rows):
        ky = phase_y + ty * up
        iy = (base_y + ky) // up  # exact: base_y + ky is a multiple of up
        row_ok = valid & (ky < taps_h) & (base_y + ky >= 0) & (iy < in_h)
        for tx in range(0, cols):
            kx = phase_x + tx * up
            ix = (base_x + kx) // up
            ok = row_ok & (kx < taps_w) & (base_x + kx >= 0) & (ix < in_w)
            sample = tl.load(x_ptr + (plane * in_h + iy) * in_w + ix, mask=ok, other=0.0).to(ACC)
            tap = tl.load(f_ptr + (taps_h - 1 - ky) * taps_w + (taps_w - 1 - kx), mask=ok, other=0.0).to(ACC)
            acc += sample * tap
    tl.store(y_ptr + offsets, acc.to(y_ptr.dtype.element_ty), mask=valid)


def _output_size(size: int, up: int, down: int, pad_lo: int, pad_hi: int, taps: int) -> int:
    """Samples left of `size` after upsampling, padding, a valid convolution with `taps` and keeping every down-th."""
    return (size * up + pad_lo + pad_hi - taps + down) // down


class _UpFirDn2d(torch.autograd.Function):
    """upfirdn2d as a Function; its derivative is its adjoint, the same Function with up and down swapped and the
    filter flipped, so every order of derivative is one kernel call."""

    @staticmethod
    def forward(ctx, x, f, up, down, padding):
        px0, px1, py0, py1 = padding
        n, c, h, w = x.shape
        out_h = _output_size(h, up, down, py0, py1, f.shape[0])
        out_w = _output_size(w, up, down, px0, px1, f.shape[1])
        assert out_h > 0 and out_w > 0, (x.shape, f.shape, up, down, padding)
        ctx.save_for_backward(f)
        ctx.args = (up, down, padding, (h, w), (out_h, out_w))
        x = x.contiguous()
        y = torch.empty([n, c, out_h, out_w], dtype=x.dtype, device=x.device)
        f = f.to(torch.float64 if x.dtype == torch.float64 else torch.float32).contiguous()
        _upfirdn2d_kernel[_grid(y.numel())](
            x, f, y, y.numel(), h, w, out_h, out_w, f.shape[0], f.shape[1], up, down, py0, px0,
            -(-f.shape[0] // up), -(-f.shape[1] // up), ACC=_accumulator(x.dtype), BLOCK=BLOCK,
        )  # fmt: skip
        return y

    @staticmethod
    def backward(ctx, dy):
        (f,) = ctx.saved_tensors
        up, down, padding, (h, w), (out_h, out_w) = ctx.args
        return _UpFirDn2d.apply(dy, f.flip([0, 1]), down, up, _adjoint_padding(padding, f.shape, up, down,
                                (h, w), (out_h, out_w))), None, None, None, None  # fmt: skip


def _adjoint_padding(padding, taps, up: int, down: int, in_size, out_size) -> tuple[int, int, int, int]:
    """The padding of the adjoint upfirdn2d. Output sample o reads padded position o * down + k with tap
    f[taps-1-k]; input i sits at i * up + pad_lo. So input i receives dy[o] f[k'] for o * down = i * up + pad_lo -
    taps + 1 + k': an upfirdn2d of dy with the flipped filter, up = down, down = up and pad_lo' = taps - 1 - pad_lo;
    pad_hi' makes exactly the input's size come out."""
    px0, _, py0, _ = padding
    lo_y, lo_x = taps[0] - 1 - py0, taps[1] - 1 - px0
    hi_y = in_size[0] * up - out_size[0] * down - lo_y + taps[0] - 1
    hi_x = in_size[1] * up - out_size[1] * down - lo_x + taps[1] - 1
    return lo_x, hi_x, lo_y, hi_y


def upfirdn2d(x: torch.Tensor, f: torch.Tensor, up: int = 1, down: int = 1, padding=(0, 0, 0, 0)) -> torch.Tensor:
    """x [N, C, H, W] -> upsample by `up` (zero insertion), pad by padding = (left, right, top, bottom) (negative:
    crop), convolve with the 2-D filter f [taps_h, taps_w], keep every `down`-th sample. f is a constant."""
    assert not f.requires_grad and f.ndim == 2, "the filter is a fixed 2-D FIR kernel"
    return _UpFirDn2d.apply(x, f, up, down, tuple(padding))


def fir_filter(x: torch.Tensor, f: torch.Tensor, pad: int, gain: float = 1.0) -> torch.Tensor:
    """nets.layers.fir_filter: pad every side, convolve with f * gain."""
    return upfirdn2d(x, f * gain, padding=(pad, pad, pad, pad))


def upsample2d(x: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
    """nets.layers.upsample2d: zero insertion, pad (2, 1), the filter with gain 4 (a constant keeps its value)."""
    return upfirdn2d(x, f * 4, up=2, padding=(2, 1, 2, 1))


def downsample2d(x: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
    """nets.layers.downsample2d: pad 1 on each side, filter, keep every second sample."""
    return upfirdn2d(x, f, down=2, padding=(1, 1, 1, 1))


TRITON_OPS = FusedOps("triton", bias_act, fir_filter, upsample2d, downsample2d)
