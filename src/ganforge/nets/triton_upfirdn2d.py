"""The Triton resampling kernel, upfirdn2d (upsample by zero insertion, pad, FIR filter, keep every down-th sample),
with the launch helpers the other Triton modules share. Written from the maths of nets/layers.py's resamplers and
nets/filtered_lrelu.py. Read nets/triton_ops.py's docstring first: it says how the kernels run on CPU (Triton's
interpreter) and which builtins they may use.

One kernel serves the StyleGAN2 resamplers and the filtered leaky ReLU: factors per axis (so that a separable filter
runs as a pass along the rows and one along the columns), an optional bias added to the input's samples, and an
optional epilogue per output sample (leaky ReLU and clamp, their derivative's mask written or applied).
"""

import math
from typing import NamedTuple

import torch
import triton
import triton.language as tl
from triton.runtime.interpreter import InterpretedFunction

GPU_BLOCK = 1024  # elements per program: a multiple of the warp size that keeps the loads of a program coalesced


def accumulator(dtype: torch.dtype):
    """float64 sums for float64 tensors (gradcheck), float32 for the rest (fp16 and bf16 round once, at the end)."""
    return tl.float64 if dtype == torch.float64 else tl.float32


def exact_dtype(dtype: torch.dtype) -> torch.dtype:
    """The torch dtype of `accumulator(dtype)`: what filters and constants are passed in."""
    return torch.float64 if dtype == torch.float64 else torch.float32


@triton.jit
def _upfirdn2d_kernel(x_ptr, f_ptr, y_ptr, numel, in_h, in_w, out_h, out_w, taps_h, taps_w, up_y, up_x, down_y,
                      down_x, pad_y, pad_x, rows, cols, b_ptr, mask_ptr, constants_ptr, channels,
                      BIAS: tl.constexpr, ACTIVATE: tl.constexpr, SAVE_MASK: tl.constexpr, MASKED: tl.constexpr,
                      ACC: tl.constexpr, BLOCK: tl.constexpr):  # fmt: skip
    """y[p, oy, ox] = sum_{ky, kx} u[oy * down_y + ky - pad_y, ox * down_x + kx - pad_x] f[taps_h-1-ky, taps_w-1-kx],
    where u is x with up-1 zeros inserted after each sample (u[i * up] = x[i]): a true convolution of the padded,
    upsampled signal, sampled every `down`. Only taps ky = phase + t * up_y meet a sample of x: `rows` and `cols`
    (ceil(taps / up)) per axis. For the filtered leaky ReLU, per output sample: BIAS adds b[channel] to every
    sample of x (not to the inserted zeros or the padding); ACTIVATE applies leaky ReLU and the clamp (constants:
    slope, clamp; inf for none), SAVE_MASK also writes the bits its derivative needs to mask_ptr, MASKED multiplies
    by the derivative those bits stand for."""
    # int64: an upsampled StyleGAN3 tensor at 1024^2 passes 2^31 elements from batch 8 on
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    valid = offsets < numel
    ox = offsets % out_w
    oy = (offsets // out_w) % out_h
    plane = offsets // (out_w * out_h)
    base_y, base_x = oy * down_y - pad_y, ox * down_x - pad_x  # position in u of tap 0
    phase_y = ((-base_y) % up_y + up_y) % up_y  # the first tap with (base + tap) divisible by up
    phase_x = ((-base_x) % up_x + up_x) % up_x
    first_y, first_x = (base_y + phase_y) // up_y, (base_x + phase_x) // up_x  # the sample of x it meets (exact)
    acc = tl.full([BLOCK], 0, ACC)
    bias = tl.load(b_ptr + plane % channels, mask=valid, other=0.0).to(ACC) if BIAS else acc
    for ty in range(0, rows):  # tap phase + t * up meets sample first + t: no division in the loops
        ky = phase_y + ty * up_y
        iy = first_y + ty
        row_ok = valid & (ky < taps_h) & (iy >= 0) & (iy < in_h)
        row = x_ptr + (plane * in_h + iy) * in_w  # per row, not per tap: the inner loop is the hot one
        taps_row = f_ptr + (taps_h - 1 - ky) * taps_w + taps_w - 1  # the filter is flipped: true convolution
        for tx in range(0, cols):
            kx = phase_x + tx * up_x
            ix = first_x + tx
            ok = row_ok & (kx < taps_w) & (ix >= 0) & (ix < in_w)
            sample = tl.load(row + ix, mask=ok, other=0.0).to(ACC)
            if BIAS:  # where not ok the tap below is 0: no bias on the inserted zeros or the padding
                sample += bias
            acc += sample * tl.load(taps_row - kx, mask=ok, other=0.0).to(ACC)
    if ACTIVATE:
        slope, clamp = tl.load(constants_ptr), tl.load(constants_ptr + 1)
        positive = acc >= 0  # as the reference's mask: the derivative at 0 is 1
        acc = tl.where(positive, acc, acc * slope)
        inside = tl.abs(acc) <= clamp  # torch.clamp passes the gradient where -clamp <= y <= clamp
        acc = tl.minimum(tl.maximum(acc, -clamp), clamp)
        if SAVE_MASK:  # one byte per sample: bit 0 the sign, bit 1 inside the clamp
            tl.store(mask_ptr + offsets, positive.to(tl.uint8) + inside.to(tl.uint8) * 2, mask=valid)
    if MASKED:  # the derivative of leaky ReLU and clamp: 1 or the slope by the sign, 0 where clamped
        slope = tl.load(constants_ptr)
        bits = tl.load(mask_ptr + offsets, mask=valid, other=0)
        acc = tl.where((bits & 2) != 0, tl.where((bits & 1) != 0, acc, acc * slope), 0.0)
    tl.store(y_ptr + offsets, acc.to(y_ptr.dtype.element_ty), mask=valid)


INTERPRETED = isinstance(_upfirdn2d_kernel, InterpretedFunction)


def grid_and_block(numel: int) -> tuple[tuple[int], int]:
    """A launch's grid and lanes per program. A GPU wants many programs of GPU_BLOCK lanes; Triton's interpreter
    pays per operation, not per lane, so there a launch is two wide programs (up to 2^16 lanes each, well inside
    Triton's 2^20): a few times faster tests, still more than one program."""
    wide = min(max(GPU_BLOCK, triton.next_power_of_2(-(-numel // 2))), 2**16)
    block = wide if INTERPRETED else GPU_BLOCK
    return (triton.cdiv(numel, block),), block


class Pass(NamedTuple):
    """One upfirdn2d: a 2-D filter (a 1-D one as [taps, 1] or [1, taps]), factors per axis (y, x), and padding
    (left, right, top, bottom; negative crops)."""

    f: torch.Tensor
    up: tuple[int, int]
    down: tuple[int, int]
    padding: tuple[int, int, int, int]

    def output_size(self, size) -> tuple[int, int]:
        """Samples left of `size` (h, w) after upsampling, padding, the valid convolution and keeping every down-th."""
        (px0, px1, py0, py1), (taps_h, taps_w) = self.padding, self.f.shape
        return ((size[0] * self.up[0] + py0 + py1 - taps_h + self.down[0]) // self.down[0],
                (size[1] * self.up[1] + px0 + px1 - taps_w + self.down[1]) // self.down[1])  # fmt: skip

    def adjoint(self, size) -> "Pass":
        """The transpose of this pass on inputs of `size`. Output o reads padded position o * down + k with tap
        f[taps-1-k]; input i sits at i * up + pad_lo. So input i receives dy[o] f[k'] for o * down = i * up + pad_lo
        - taps + 1 + k': an upfirdn2d of dy with the flipped filter, up = down, down = up and pad_lo' = taps - 1 -
        pad_lo; pad_hi' makes exactly the input's size come out."""
        out = self.output_size(size)
        (px0, _, py0, _), (taps_h, taps_w) = self.padding, self.f.shape
        lo_y, lo_x = taps_h - 1 - py0, taps_w - 1 - px0
        hi_y = size[0] * self.up[0] - out[0] * self.down[0] - lo_y + taps_h - 1
        hi_x = size[1] * self.up[1] - out[1] * self.down[1] - lo_x + taps_w - 1
        return Pass(self.f.flip([0, 1]), self.down, self.up, (lo_x, hi_x, lo_y, hi_y))


def launch(x, p: Pass, b=None, activate=False, save_mask=False, mask=None, slope=1.0, clamp=None):
    """One call of the kernel (no autograd) -> (y, the mask it saved or None). x [N, C, H, W] in any layout; b [C]
    or None; activate: leaky ReLU(slope) and the clamp (None: none) after the filter, with save_mask their
    derivative's mask; mask (uint8 shaped like y): multiply by the derivative it records."""
    n, c, h, w = x.shape
    out_h, out_w = p.output_size((h, w))
    assert out_h > 0 and out_w > 0, (x.shape, p)
    assert mask is None or (not activate and mask.shape == (n, c, out_h, out_w) and mask.dtype == torch.uint8)
    assert activate or not save_mask
    x = x.contiguous()
    y = torch.empty([n, c, out_h, out_w], dtype=x.dtype, device=x.device)
    f = p.f.to(exact_dtype(x.dtype)).contiguous()
    saved = torch.empty(y.shape, dtype=torch.uint8, device=x.device) if save_mask else None
    constants = f  # unread unless the epilogue needs the slope and the clamp
    if activate or mask is not None:
        constants = torch.tensor([slope, math.inf if clamp is None else clamp], dtype=f.dtype)
        constants = constants.to(x.device, non_blocking=True)  # the host does not wait for the device
    (up_y, up_x), (px0, _, py0, _) = p.up, p.padding
    grid, block = grid_and_block(y.numel())
    _upfirdn2d_kernel[grid](
        x, f, y, y.numel(), h, w, out_h, out_w, f.shape[0], f.shape[1], up_y, up_x, *p.down, py0, px0,
        -(-f.shape[0] // up_y), -(-f.shape[1] // up_x), x if b is None else b.contiguous(),
        next((m for m in (saved, mask) if m is not None), y), constants, c, BIAS=b is not None, ACTIVATE=activate,
        SAVE_MASK=save_mask, MASKED=mask is not None, ACC=accumulator(x.dtype), BLOCK=block,
    )  # fmt: skip
    return y, saved


class _UpFirDn2d(torch.autograd.Function):
    """upfirdn2d as a Function; its derivative is its adjoint, the same Function with up and down swapped and the
    filter flipped, so every order of derivative is one kernel call."""

    @staticmethod
    def forward(ctx, x, p: Pass):
        ctx.p, ctx.size = p, x.shape[2:]
        return launch(x, p)[0]

    @staticmethod
    def backward(ctx, dy):
        return _UpFirDn2d.apply(dy, ctx.p.adjoint(ctx.size)), None


def upfirdn2d(x: torch.Tensor, f: torch.Tensor, up: int = 1, down: int = 1, padding=(0, 0, 0, 0)) -> torch.Tensor:
    """x [N, C, H, W] -> upsample by `up` (zero insertion), pad by padding = (left, right, top, bottom) (negative:
    crop), convolve with the 2-D filter f [taps_h, taps_w], keep every `down`-th sample. f is a constant."""
    assert not f.requires_grad and f.ndim == 2, "the filter is a fixed 2-D FIR kernel"
    return _UpFirDn2d.apply(x, Pass(f, (up, up), (down, down), tuple(padding)))
