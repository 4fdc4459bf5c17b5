"""The Triton kernels compiled for the CUDA GPU (the CPU tests run them through Triton's interpreter instead) against
the reference ops on the same GPU: values and gradients of each op, then a whole step. Run as a script in a fresh
process by test_kernels_triton_cuda.py, so that no interpreted copy of the kernels imported earlier is reused."""

import os

import torch
from kernel_helpers import assert_resamplers_equal, assert_step_equal

from ganforge.nets.kernels import kernel_ops
from ganforge.nets.layers import bias_act
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
    print("compiled Triton kernels equal the reference on", torch.cuda.get_device_name())


if __name__ == "__main__":
    main()
