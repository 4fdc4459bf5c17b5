"""The filtered leaky ReLU against a slow, obvious float64 reference, and the low-pass designs against scipy."""

import math

import numpy as np
import pytest
import scipy.signal
import scipy.special
import torch

from ganforge.nets.filtered_lrelu import filtered_lrelu
from ganforge.nets.lowpass import bessel_j1, kaiser_attenuation, kaiser_beta, lowpass_filter


def reference(x, fu, fd, b, up, down, padding, gain, slope, clamp):
    """Spelled out: bias, explicit zero insertion, pad/crop, full 2-D convolution (a loop over taps), leaky ReLU
    times gain, clamp, 2-D convolution, keep every down-th sample. Separable filters become outer products."""
    x = x.double() + b.double()[None, :, None, None]
    n, c, h, w = x.shape
    z = torch.zeros(n, c, h * up, w * up, dtype=torch.float64)
    z[:, :, ::up, ::up] = x
    z = torch.nn.functional.pad(z, list(padding))
    z = convolve_valid(z, fu) * up**2
    z = torch.nn.functional.leaky_relu(z, slope) * gain
    if clamp is not None:
        z = z.clamp(-clamp, clamp)
    return convolve_valid(z, fd)[:, :, ::down, ::down]


def convolve_valid(x, f):
    """Valid 2-D convolution (the kernel flipped): out[i, j] = sum_{a, b} x[i + a, j + b] f[K-1-a, K-1-b]."""
    f = torch.ones(1, 1, dtype=torch.float64) if f is None else f.double()
    f = torch.outer(f, f) if f.ndim == 1 else f
    kh, kw = f.shape
    out = torch.zeros(*x.shape[:2], x.shape[2] - kh + 1, x.shape[3] - kw + 1, dtype=torch.float64)
    for a in range(kh):
        for b in range(kw):
            out += x[:, :, a : a + out.shape[2], b : b + out.shape[3]] * f[kh - 1 - a, kw - 1 - b]
    return out


CASES = [
    # up, down, fu taps, fd taps, radial fd, padding, gain, slope, clamp
    (2, 2, 12, 12, False, (9, 8, 9, 8), math.sqrt(2), 0.2, None),  # a typical non-critical layer
    (2, 2, 12, 12, True, (7, 6, 7, 6), math.sqrt(2), 0.2, 0.5),  # config R, clamp active
    (4, 2, 24, 12, False, (5, 13, 5, 13), math.sqrt(2), 0.2, 256),  # upsampling layer, asymmetric padding
    (2, 4, 12, 24, False, (-1, 30, -1, 30), math.sqrt(2), 0.2, None),  # downsampling, cropping
    (1, 1, None, None, False, (0, 0, 0, 0), 1.0, 1.0, 0.3),  # toRGB: bias and clamp only
]


@pytest.mark.parametrize(("up", "down", "ku", "kd", "radial", "padding", "gain", "slope", "clamp"), CASES)
def test_filtered_lrelu_matches_slow_reference(up, down, ku, kd, radial, padding, gain, slope, clamp):
    gen = torch.Generator().manual_seed(up * 10 + down)
    x = torch.randn(2, 3, 9, 9, generator=gen, dtype=torch.float64)
    b = torch.randn(3, generator=gen, dtype=torch.float64)
    # random asymmetric taps, so a filter applied flipped or transposed would show
    fu = None if ku is None else torch.randn(ku, generator=gen, dtype=torch.float64)
    fd = None if kd is None else torch.randn(*((kd, kd) if radial else (kd,)), generator=gen, dtype=torch.float64)
    args = (x, fu, fd, b, up, down, padding, gain, slope, clamp)
    expected = reference(*args)
    got = filtered_lrelu(x, fu, fd, b, up=up, down=down, padding=padding, gain=gain, slope=slope, clamp=clamp)
    assert got.shape == expected.shape
    torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize(("up", "down", "ku", "kd", "radial", "padding", "gain", "slope", "clamp"), CASES)
def test_filtered_lrelu_gradients_match_reference(up, down, ku, kd, radial, padding, gain, slope, clamp):
    gen = torch.Generator().manual_seed(up * 10 + down + 1)
    x = torch.randn(2, 2, 7, 7, generator=gen, dtype=torch.float64, requires_grad=True)
    b = torch.randn(2, generator=gen, dtype=torch.float64, requires_grad=True)
    fu = None if ku is None else torch.randn(ku, generator=gen, dtype=torch.float64)
    fd = None if kd is None else torch.randn(*((kd, kd) if radial else (kd,)), generator=gen, dtype=torch.float64)
    args = (fu, fd, b, up, down, padding, gain, slope, clamp)
    y = reference(x, *args)
    weights = torch.randn(y.shape, generator=gen, dtype=torch.float64)
    expected = torch.autograd.grad((reference(x, *args) * weights).sum(), [x, b])
    got = torch.autograd.grad((filtered_lrelu(x, *args) * weights).sum(), [x, b])
    for g, e in zip(got, expected, strict=True):
        torch.testing.assert_close(g, e, rtol=1e-10, atol=1e-10)


def test_filtered_lrelu_second_order_gradients_and_lean_saved_state():
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(1, 2, 6, 6, generator=gen, dtype=torch.float64, requires_grad=True)
    b = torch.randn(2, generator=gen, dtype=torch.float64, requires_grad=True)
    fu, fd = torch.randn(8, generator=gen, dtype=torch.float64), torch.randn(8, 8, generator=gen, dtype=torch.float64)
    args = dict(fu=fu, fd=fd, up=2, down=2, padding=(5, 4, 5, 4), clamp=2.0)
    assert torch.autograd.gradgradcheck(lambda x, b: filtered_lrelu(x, b=b, **args), (x, b))
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        y = filtered_lrelu(x.float().detach().requires_grad_(), b=b.float(), **{**args, "fu": fu.float(),
                                                                                  "fd": fd.float()})  # fmt: skip
    upsampled = x.shape[0] * x.shape[1] * (2 * 6 + 9 - 7) ** 2  # samples of the upsampled signal
    assert y.shape == (1, 2, 4, 4)
    # two bool masks and the filters: less than one float copy of the upsampled signal (plain ops keep four)
    assert sum(t.numel() * t.element_size() for t in saved) < 4 * upsampled


def test_filtered_lrelu_float32_close_to_reference():
    fu = lowpass_filter(12, cutoff=4, width=4, fs=16)
    fd = lowpass_filter(12, cutoff=4, width=4, fs=16, radial=True)
    x, b = torch.randn(2, 4, 10, 10), torch.randn(4)
    got = filtered_lrelu(x, fu, fd, b, up=2, down=2, padding=(9, 8, 9, 8))
    expected = reference(x, fu, fd, b, 2, 2, (9, 8, 9, 8), math.sqrt(2), 0.2, None)
    torch.testing.assert_close(got.double(), expected, rtol=1e-5, atol=1e-5)


DESIGNS = [(12, 2.0, 3.3, 16), (24, 45.25, 20.1, 128), (6, 2, 2, 8)]  # numtaps, cutoff, width, fs


@pytest.mark.parametrize(("numtaps", "cutoff", "width", "fs"), DESIGNS)
def test_separable_lowpass_equals_scipy_firwin(numtaps, cutoff, width, fs):
    expected = scipy.signal.firwin(numtaps=numtaps, cutoff=cutoff, width=width, fs=fs)
    np.testing.assert_array_equal(lowpass_filter(numtaps, cutoff, width, fs).numpy(), expected.astype(np.float32))


def test_radial_lowpass_equals_hand_computed_windowed_jinc():
    numtaps, cutoff, width, fs = 12, 5.0, 6.0, 32
    x = (np.arange(numtaps) - (numtaps - 1) / 2) / fs
    r = np.hypot(*np.meshgrid(x, x))
    atten = scipy.signal.kaiser_atten(numtaps, width / (fs / 2))
    window = scipy.signal.windows.kaiser(numtaps, scipy.signal.kaiser_beta(atten))
    expected = scipy.special.j1(2 * np.pi * cutoff * r) / (np.pi * r) * np.outer(window, window)
    got = lowpass_filter(numtaps, cutoff, width, fs, radial=True).numpy()
    np.testing.assert_allclose(got, expected / expected.sum(), rtol=1e-6, atol=1e-9)
    assert got.shape == (12, 12) and np.allclose(got, got.T)


def test_kaiser_formulas_and_bessel_equal_scipy():
    for numtaps, width in [(12, 0.1), (24, 0.5), (4, 0.01)]:
        assert kaiser_attenuation(numtaps, width) == pytest.approx(scipy.signal.kaiser_atten(numtaps, width))
    for attenuation in [10.0, 30.0, 60.0]:
        assert kaiser_beta(attenuation) == pytest.approx(scipy.signal.kaiser_beta(attenuation))
    z = np.linspace(0, 40, 401)
    np.testing.assert_allclose(bessel_j1(z), scipy.special.j1(z), rtol=0, atol=1e-14)
    assert lowpass_filter(1, 2, 2, 8) is None
