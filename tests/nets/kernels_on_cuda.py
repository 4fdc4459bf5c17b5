"""The Triton kernels compiled for the CUDA GPU (the CPU tests run them through Triton's interpreter instead) against
the reference ops on the same GPU: values and gradients of each op, then a whole step (StyleGAN2 G and D, and the
StyleGAN3-T and -R generators). Run as a script in a fresh process by test_kernels_triton_cuda.py, so that no
interpreted copy of the kernels imported earlier is reused."""

import os

import torch
from kernel_helpers import assert_resamplers_equal, assert_sg3_step_equal, assert_step_equal

from ganforge.nets.filtered_lrelu import filtered_lrelu
from ganforge.nets.kernels import kernel_ops
from ganforge.nets.layers import bias_act
from ganforge.nets.lowpass import lowpass_filter
from ganforge.numerics import fp32_math

CUDA = torch.device("cuda")


def check_bias_act(triton_ops) -> None:
    for shape in [(1, 1, 1, 1), (3, 5, 7, 9), (4, 512, 32, 32), (8, 512)]:  # odd, a real layer's, the mapping's
        for act, gain, clamp in [("lrelu", 2**0.5, None), ("lrelu", 2**0.5, 256.0), ("linear", 1.0, 0.3)]:
            x = torch.randn(shape, device=CUDA, requires_grad=True)
            b = torch.randn(shape[1], device=CUDA, requires_grad=True)
            expected, got = bias_act(x, b, act, gain, clamp), triton_ops.bias_act(x, b, act, gain, clamp)
            torch.testing.assert_close(got, expected)
            g = torch.randn_like(expected)
            wants, haves = torch.autograd.grad(expected, (x, b), g), torch.autograd.grad(got, (x, b), g)
            for want, have in zip(wants, haves, strict=True):
                torch.testing.assert_close(have, want, rtol=1e-4, atol=1e-4)
            for dtype in (torch.float16, torch.bfloat16):  # computed in float32, rounded once
                exact = bias_act(x.detach().to(dtype).double(), b.detach().to(dtype).double(), act, gain, clamp)
                half = triton_ops.bias_act(x.detach().to(dtype), b.detach().to(dtype), act, gain, clamp)
                tolerance = 1e-3 if dtype == torch.float16 else 8e-3
                torch.testing.assert_close(half.double(), exact, rtol=tolerance, atol=tolerance)


def check_filtered_lrelu(triton_ops) -> None:
    """StyleGAN3-T and -R layers' shapes (12-tap filters, a radial one, up/down 2 and 4, a crop, toRGB) at sizes
    that take many programs: values and gradients in float32, and bfloat16 against float64 by relative norm."""
    fu, fd = lowpass_filter(12, 4, 4, 16).to(CUDA), lowpass_filter(12, 4, 4, 16).to(CUDA)
    radial = lowpass_filter(12, 4, 4, 16, radial=True).to(CUDA)
    cases = [((4, 64, 36, 36), fu, fd, 2, 2, (9, 8, 9, 8), 2**0.5, 0.2, None),
             ((4, 64, 36, 36), fu, radial, 2, 2, (7, 6, 7, 6), 2**0.5, 0.2, 256.0),
             ((2, 32, 52, 52), lowpass_filter(24, 4, 4, 32).to(CUDA), fd, 4, 2, (5, 13, 5, 13), 2**0.5, 0.2, 0.5),
             ((2, 32, 84, 84), fu, lowpass_filter(24, 4, 4, 32).to(CUDA), 2, 4, (-1, 30, -1, 30), 2**0.5, 0.2, None),
             ((2, 3, 64, 64), None, None, 1, 1, (0, 0, 0, 0), 1.0, 1.0, 0.3)]  # fmt: skip
    for shape, fu_, fd_, *rest in cases:
        x = torch.randn(shape, device=CUDA, requires_grad=True)
        b = torch.randn(shape[1], device=CUDA, requires_grad=True)
        expected, got = filtered_lrelu(x, fu_, fd_, b, *rest), triton_ops.filtered_lrelu(x, fu_, fd_, b, *rest)
        torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)
        g = torch.randn_like(expected)
        wants, haves = torch.autograd.grad(expected, (x, b), g), torch.autograd.grad(got, (x, b), g)
        for want, have in zip(wants, haves, strict=True):
            torch.testing.assert_close(have, want, rtol=1e-3, atol=1e-3)
        half = triton_ops.filtered_lrelu(x.detach().bfloat16(), fu_, fd_, b.detach().bfloat16(), *rest)
        exact = filtered_lrelu(x.detach().bfloat16().double(), fu_, fd_, b.detach().bfloat16().double(), *rest)
        assert (half.double() - exact).norm() <= 0.02 * exact.norm(), shape


def main() -> None:
    assert torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET", "0") in ("", "0")
    ops = kernel_ops("triton")
    from ganforge.nets import triton_ops

    assert type(triton_ops._bias_act_kernel).__name__ == "JITFunction", "the interpreter, not the compiler"
    torch.manual_seed(0)
    with fp32_math(tf32=False):  # cuDNN's convolutions would otherwise round to TF32 in the reference
        check_bias_act(triton_ops)
        for size in [(2, 3), (5, 9), (64, 64)]:
            assert_resamplers_equal(ops, torch.randn(2, 3, *size, device=CUDA, requires_grad=True))
        assert_step_equal(ops, CUDA)
        check_filtered_lrelu(triton_ops)
        for config in ("t", "r"):
            assert_sg3_step_equal(ops, CUDA, config)
    print("compiled Triton kernels equal the reference on", torch.cuda.get_device_name())


if __name__ == "__main__":
    main()
