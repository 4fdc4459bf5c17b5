"""The Triton kernels (nets/triton_ops.py) against the reference ops, on CPU through Triton's interpreter: values
and gradients (gradcheck and gradgradcheck in float64, tolerances in float32 and float16), odd shapes, every
resampling factor and padding the networks use and more, and whole networks, step and regularisers, with the
kernels against the same networks without them. The interpreter is slow: tensors stay small."""

import importlib
import os
from unittest import mock

import pytest
import torch
import torch.nn.functional as F
from kernel_helpers import assert_resamplers_equal, assert_sg3_step_equal, assert_step_equal
from test_nets_filtered_lrelu import convolve_valid

from ganforge.devices import pick_kernels
from ganforge.errors import UserError
from ganforge.nets.filtered_lrelu import filtered_lrelu
from ganforge.nets.kernels import kernel_ops
from ganforge.nets.layers import bias_act
from ganforge.nets.lowpass import lowpass_filter

pytest.importorskip("triton", reason="Triton is not installed (the dev extra installs it)")


@pytest.fixture(scope="module")
def triton_ops():
    """nets.triton_ops as Triton's CPU interpreter runs it: the switch must be on when its kernels are defined
    (first import) and while they are chosen; it is off again for the other test modules."""
    with mock.patch.dict(os.environ, {"TRITON_INTERPRET": "1"}):
        module = importlib.import_module("ganforge.nets.triton_ops")
        assert type(module._bias_act_kernel).__name__ == "InterpretedFunction", "imported before the interpreter"
        yield module


def upfirdn2d_loops(x, f, up, down, padding):
    """Spelled out in float64: zero insertion, pad (negative: crop), valid true convolution, every down-th sample."""
    n, c, h, w = x.shape
    z = torch.zeros(n, c, h * up, w * up, dtype=torch.float64)
    z[:, :, ::up, ::up] = x.double()
    return convolve_valid(F.pad(z, list(padding)), f)[:, :, ::down, ::down]


@pytest.mark.parametrize("shape", [(1, 1, 1, 1), (2, 3, 5, 7), (1, 2, 33, 35)])
@pytest.mark.parametrize(("act", "gain", "clamp"), [("lrelu", 2**0.5, None), ("lrelu", 0.7, 0.5), ("linear", 1, 0.3)])
def test_bias_act_equals_the_reference(triton_ops, shape, act, gain, clamp):
    x, b = torch.randn(shape, dtype=torch.float64), torch.randn(shape[1], dtype=torch.float64)
    assert torch.equal(triton_ops.bias_act(x, b, act, gain, clamp), bias_act(x, b, act, gain, clamp))
    x32 = torch.randn(shape)  # float32 computes in float32: the same roundings, but the order may differ
    torch.testing.assert_close(triton_ops.bias_act(x32, None, act, gain, clamp), bias_act(x32, None, act, gain, clamp))


@pytest.mark.parametrize(("dtype", "tolerance"), [(torch.float16, 1e-3), (torch.bfloat16, 8e-3)])
def test_bias_act_rounds_half_precision_once(triton_ops, dtype, tolerance):
    """float16 and bfloat16 are computed in float32 and rounded once: within one rounding of the float64 result."""
    x, b = torch.randn(2, 4, 3, 5).to(dtype), torch.randn(4).to(dtype)
    exact = bias_act(x.double(), b.double(), "lrelu", 2**0.5, 1.0)
    got = triton_ops.bias_act(x, b, "lrelu", 2**0.5, 1.0)
    assert got.dtype == dtype
    torch.testing.assert_close(got.double(), exact, rtol=tolerance, atol=tolerance)


def test_bias_act_gradients_of_every_order(triton_ops):
    """gradcheck and gradgradcheck in float64, a channels-only input (the mapping network's [N, C]) included; the
    clamp and the kink of leaky ReLU pass or stop gradients exactly where torch's clamp and leaky_relu do."""
    x = torch.randn(2, 3, 2, 3, dtype=torch.float64, requires_grad=True)
    b = torch.randn(3, dtype=torch.float64, requires_grad=True)
    op = lambda x, b: triton_ops.bias_act(x, b, "lrelu", 1.3, 0.8)  # noqa: E731
    assert torch.autograd.gradcheck(op, (x, b), fast_mode=True)
    assert torch.autograd.gradgradcheck(op, (x, b), fast_mode=True)
    flat = torch.randn(3, 5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda v: triton_ops.bias_act(v, None, "lrelu", 1.3, None), (flat,))
    edges = torch.tensor([[-1.0, 0.0, 0.5, 1.0, 3.0]], dtype=torch.float64, requires_grad=True)  # 0 and the clamp
    for implementation in (bias_act, triton_ops.bias_act):
        (grad,) = torch.autograd.grad(implementation(edges, None, "lrelu", 1.0, 1.0).sum(), edges)
        assert grad.tolist() == [[0.2, 0.2, 1.0, 1.0, 0.0]], implementation


@pytest.mark.parametrize(
    ("up", "down", "padding", "taps"),
    [(1, 1, (0, 0, 0, 0), (4, 4)), (2, 1, (2, 1, 2, 1), (4, 4)), (1, 2, (1, 1, 1, 1), (4, 4)),
     (4, 1, (3, -1, 0, 2), (5, 3)), (1, 4, (-1, 2, 3, 0), (3, 6)), (2, 2, (1, 0, 0, 1), (1, 1)),
     (4, 2, (5, 4, 5, 4), (12, 12))],
)  # fmt: skip
def test_upfirdn2d_equals_the_loops(triton_ops, up, down, padding, taps):
    """Every factor 1/2/4 either way, crops, asymmetric and 1x1 filters, sizes not a multiple of anything."""
    x, f = torch.randn(2, 3, 7, 5, dtype=torch.float64), torch.randn(taps, dtype=torch.float64)
    expected = upfirdn2d_loops(x, f, up, down, padding)
    torch.testing.assert_close(triton_ops.upfirdn2d(x, f, up, down, padding), expected, rtol=1e-12, atol=1e-12)
    one = torch.randn(1, 1, 1, 1, dtype=torch.float64)  # a 1x1 image: most taps fall outside it
    if (one.shape[2] * up + padding[2] + padding[3] - taps[0]) >= 0 and padding[0] + padding[1] + up >= taps[1]:
        expected = upfirdn2d_loops(one, f, up, down, padding)
        torch.testing.assert_close(triton_ops.upfirdn2d(one, f, up, down, padding), expected)


@pytest.mark.parametrize(("up", "down", "padding"), [(2, 1, (2, 1, 2, 1)), (1, 2, (1, 1, 0, 2)), (4, 2, (0, 3, 1, 1))])
def test_upfirdn2d_gradients_of_every_order(triton_ops, up, down, padding):
    """Its derivative is its adjoint (flipped filter, up and down swapped): gradcheck and gradgradcheck, float64."""
    x = torch.randn(1, 2, 3, 4, dtype=torch.float64, requires_grad=True)
    f = torch.randn(4, 3, dtype=torch.float64)
    op = lambda x: triton_ops.upfirdn2d(x, f, up, down, padding)  # noqa: E731
    assert torch.autograd.gradcheck(op, (x,), fast_mode=True)
    assert torch.autograd.gradgradcheck(op, (x,), fast_mode=True)


@pytest.mark.parametrize("size", [(2, 3), (4, 4), (5, 9)])  # the reference cannot downsample 1x1
def test_the_resamplers_equal_the_reference(triton_ops, size):
    """fir_filter, upsample2d and downsample2d of the networks, values and input gradients, float32."""
    assert_resamplers_equal(triton_ops.TRITON_OPS, torch.randn(2, 3, *size, requires_grad=True))


def test_a_whole_step_with_the_kernels_equals_the_reference(triton_ops):
    assert_step_equal(kernel_ops(pick_kernels("triton", "cpu", compiled=False)[0]), torch.device("cpu"))


def test_triton_where_it_cannot_run_is_a_user_error():
    """Outside the interpreter a CPU cannot run the kernels: --kernels triton says so and names the fix; auto falls
    back to the reference and says why; with --compile, auto keeps the reference ops for inductor to fuse."""
    with mock.patch.dict(os.environ, {"TRITON_INTERPRET": "0"}):
        with pytest.raises(UserError, match=r"--kernels triton: the kernels need a CUDA device .*use --kernels"):
            pick_kernels("triton", "cpu", compiled=False)
        assert pick_kernels("auto", "cpu", compiled=False) == (
            "reference",
            "auto: the kernels need a CUDA device (this run is on cpu)",
        )
    assert pick_kernels("auto", "cuda", compiled=True)[0] == "reference"
    assert pick_kernels("auto", "cuda", compiled=False)[0] == "triton"
    with mock.patch("importlib.util.find_spec", return_value=None):
        with pytest.raises(UserError, match="Triton is not installed"):
            pick_kernels("triton", "cuda", compiled=False)
        assert pick_kernels("auto", "cuda", compiled=False)[0] == "reference"


# up, down, upsampling taps, downsampling taps (a tuple: a 2-D filter), padding, gain, slope, clamp
FLRELU_CASES = [
    (2, 2, 6, 6, (3, 2, 3, 2), 2**0.5, 0.2, None),  # a non-critical layer's factors, shorter filters
    (2, 2, 4, (4, 4), (2, 1, 1, 3), 2**0.5, 0.2, 0.5),  # config R's 2-D downsampling filter; the clamp active
    (4, 2, 8, 4, (5, -1, 2, 4), 2**0.5, 0.2, 256),  # upsampling by 4, asymmetric and negative padding
    (2, 4, (4, 4), 8, (-1, 6, -1, 6), 0.7, 0.3, None),  # a 2-D upsampling filter, downsampling by 4, crops
    (1, 1, None, None, (0, 0, 0, 0), 1.0, 1.0, 0.3),  # toRGB: bias and clamp only, linear
    (1, 2, None, 3, (1, 2, 0, -1), 1.3, 0.2, 1.0),  # no upsampling filter, padding and a crop
    (2, 1, 4, None, (1, 1, 2, 2), 2**0.5, 0.2, None),  # no downsampling filter
]


def flrelu_args(case, channels, dtype=torch.float64, seed=0):
    """(fu, fd, b, up, down, padding, gain, slope, clamp) of a case: random taps, so that a filter applied flipped,
    transposed or on the wrong axis would show."""
    gen = torch.Generator().manual_seed(seed)
    up, down, ku, kd, padding, gain, slope, clamp = case
    fu, fd = (None if k is None else torch.randn(k, generator=gen, dtype=dtype) for k in (ku, kd))
    return fu, fd, torch.randn(channels, generator=gen, dtype=dtype), up, down, padding, gain, slope, clamp


@pytest.mark.parametrize("case", FLRELU_CASES)
def test_filtered_lrelu_equals_the_reference(triton_ops, case):
    """Values and the gradients of x and b in float64, on an odd size and on a 1x1 image where it gives an output;
    more upsampled samples than one program of 1024 lanes holds."""
    for shape in [(2, 3, 9, 7), (1, 3, 1, 1)]:
        x = torch.randn(shape, dtype=torch.float64, requires_grad=True)
        fu, fd, b, *rest = flrelu_args(case, shape[1])
        try:
            expected = filtered_lrelu(x, fu, fd, b.requires_grad_(), *rest)
        except RuntimeError:  # the 1x1 image is smaller than the filters' footprint
            assert shape[2] == 1
            continue
        got = triton_ops.filtered_lrelu(x, fu, fd, b, *rest)
        torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-10)
        weights = torch.randn_like(expected)
        wants = torch.autograd.grad((expected * weights).sum(), [x, b])
        haves = torch.autograd.grad((got * weights).sum(), [x, b])
        for have, want in zip(haves, wants, strict=True):
            torch.testing.assert_close(have, want, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("case", [FLRELU_CASES[1], FLRELU_CASES[3]], ids=["2-D down", "2-D up"])
def test_filtered_lrelu_gradients_of_every_order(triton_ops, case):
    """gradcheck and gradgradcheck in float64 (the path-length penalty differentiates G's gradient again)."""
    x = torch.randn(1, 2, 3, 4, dtype=torch.float64, requires_grad=True)
    fu, fd, b, *rest = flrelu_args(case, 2)
    op = lambda x, b: triton_ops.filtered_lrelu(x, fu, fd, b, *rest)  # noqa: E731
    assert torch.autograd.gradcheck(op, (x, b.requires_grad_()), fast_mode=True)
    assert torch.autograd.gradgradcheck(op, (x, b), fast_mode=True)


@pytest.mark.parametrize(
    ("dtype", "tolerance", "grad_tolerance"),
    [(torch.float32, 1e-5, 1e-5), (torch.float16, 5e-3, 5e-3), (torch.bfloat16, 0.1, 0.03)],
)
def test_filtered_lrelu_in_lower_precision_and_channels_last(triton_ops, dtype, tolerance, grad_tolerance):
    """Real low-pass filters (config R's: a radial downsampling one) in float32, float16 and bfloat16 (summed in
    float32, rounded where the reference rounds: the upsampled signal is kept in the input's dtype) against the
    float64 reference on the same rounded input; the gradient by its relative norm, since a sample a rounding moves
    across 0 takes the other slope (bfloat16's bounds: about twice the reference's own bfloat16 error). A
    channels-last input gives a channels-last output, as the reference's does."""
    torch.manual_seed(0)
    fu, fd = lowpass_filter(8, 2, 2, 8), lowpass_filter(8, 2, 2, 8, radial=True)
    b, rest = torch.randn(4).to(dtype), (2, 2, (4, 3, 4, 3), 2**0.5, 0.2, None)
    x = torch.randn(2, 4, 6, 5).to(dtype).contiguous(memory_format=torch.channels_last).requires_grad_()
    exact = x.detach().double().requires_grad_()
    expected = filtered_lrelu(exact, fu.double(), fd.double(), b.double(), *rest)
    got = triton_ops.filtered_lrelu(x, fu, fd, b, *rest)
    assert got.dtype == dtype and got.is_contiguous(memory_format=torch.channels_last)
    assert filtered_lrelu(x, fu, fd, b, *rest).is_contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close(got.double(), expected, rtol=tolerance, atol=tolerance)
    weights = torch.randn_like(expected)
    (want,) = torch.autograd.grad((expected * weights).sum(), exact)
    (have,) = torch.autograd.grad((got * weights.to(dtype)).sum(), x)
    assert (have.double() - want).norm() <= grad_tolerance * want.norm()


def test_filtered_lrelu_keeps_one_byte_per_upsampled_sample(triton_ops):
    """What autograd keeps between forward and backward: the mask, one byte per upsampled sample (the reference:
    two bool masks), and no float copy of anything."""
    fu, fd, b, *rest = flrelu_args(FLRELU_CASES[0], 3, torch.float32)
    x = torch.randn(2, 3, 5, 6, requires_grad=True)
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        triton_ops.filtered_lrelu(x, fu, fd, b, *rest)
    upsampled = 2 * 3 * (5 * 2 + 3 + 2 - 5) * (6 * 2 + 3 + 2 - 5)  # pad 3 + 2, 6 taps
    assert [(t.dtype, t.numel()) for t in saved] == [(torch.uint8, upsampled)]


@pytest.mark.parametrize("config", ["t", "r"])
def test_a_stylegan3_generator_step_with_the_kernels_equals_the_reference(triton_ops, config):
    assert_sg3_step_equal(triton_ops.TRITON_OPS, torch.device("cpu"), config)
