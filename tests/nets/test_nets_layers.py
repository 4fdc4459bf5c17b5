"""Reference tests for the numerical building blocks: FIR resampling and modulated convolution."""

import pytest
import torch
from nets_reference import (
    SQRT2,
    SQRT_HALF,
    apply_reference,
    conv_reference,
    lrelu,
    modconv_reference,
    upconv1x1_reference,
)

from ganforge.nets import winograd
from ganforge.nets.layers import (
    Conv2dLayer,
    FullyConnectedLayer,
    bias_act,
    downsample2d,
    fir_kernel,
    modulated_conv2d,
    normalize_2nd_moment,
    upsample2d,
)


def test_fir_kernel_is_normalized_separable_1331():
    f = fir_kernel()
    taps = torch.tensor([1.0, 3.0, 3.0, 1.0]) / 8
    assert torch.allclose(f, torch.outer(taps, taps))
    assert f.sum().item() == pytest.approx(1.0)


def test_upsample2d_matches_zero_insertion_reference():
    x = torch.randn(2, 3, 5, 7, dtype=torch.float64)
    ours = upsample2d(x, fir_kernel().double())
    ref = apply_reference(x, up=2, down=1, pad=(2, 1), gain=4.0)  # official upsample2d padding for 4 taps
    assert ours.shape == (2, 3, 10, 14)
    torch.testing.assert_close(ours, ref, rtol=0, atol=1e-12)


def test_downsample2d_matches_direct_reference():
    x = torch.randn(2, 3, 8, 6, dtype=torch.float64)
    ours = downsample2d(x, fir_kernel().double())
    ref = apply_reference(x, up=1, down=2, pad=(1, 1), gain=1.0)
    assert ours.shape == (2, 3, 4, 3)
    torch.testing.assert_close(ours, ref, rtol=0, atol=1e-12)


def test_fir_resampling_keeps_a_constant_image_constant_away_from_borders():
    x = torch.full((1, 1, 8, 8), 3.0)
    assert torch.allclose(upsample2d(x, fir_kernel())[..., 2:-2, 2:-2], torch.tensor(3.0))
    assert torch.allclose(downsample2d(x, fir_kernel())[..., 1:-1, 1:-1], torch.tensor(3.0))


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize(("demodulate", "up", "k"), [(True, False, 3), (True, True, 3), (False, False, 1)])
def test_modulated_conv2d_matches_per_sample_reference(fused, demodulate, up, k):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 4, 5, 6, generator=g, dtype=torch.float64)
    weight = torch.randn(5, 4, k, k, generator=g, dtype=torch.float64)
    styles = torch.randn(3, 4, generator=g, dtype=torch.float64) + 1
    ours = modulated_conv2d(x, weight, styles, demodulate=demodulate, up=up, fused=fused,
                            resample_filter=fir_kernel().double())  # fmt: skip
    ref = modconv_reference(x, weight, styles, demodulate, up)
    assert ours.shape == ref.shape == (3, 5, 10 if up else 5, 12 if up else 6)
    torch.testing.assert_close(ours, ref, rtol=1e-10, atol=1e-10)


def test_normalize_2nd_moment_gives_unit_mean_square():
    x = torch.randn(4, 16) * 7
    assert torch.allclose(normalize_2nd_moment(x).square().mean(dim=1), torch.ones(4), atol=1e-5)


@pytest.mark.parametrize("fused", [False, True])
@pytest.mark.parametrize("up", [False, True])
def test_modulated_conv2d_fp16_activations_do_not_overflow(fused, up):
    # fp32 master weights far outside fp16's range after multiplication: the pre-normalisation must absorb them
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 4, 5, 6, generator=g)
    weight = torch.randn(5, 4, 3, 3, generator=g) * 1e4
    styles = (torch.randn(3, 4, generator=g) + 1) * 100
    f = fir_kernel()
    ours = modulated_conv2d(x.half(), weight, styles, up=up, fused=fused, resample_filter=f)
    ref = modulated_conv2d(x.double(), weight.double(), styles.double(), up=up, fused=fused, resample_filter=f.double())
    assert ours.dtype == torch.float16
    torch.testing.assert_close(ours.double(), ref, rtol=0, atol=1e-2)


def test_normalize_2nd_moment_keeps_a_zero_row_zero():
    # a zero z (the mean of z and -z, say) reaches the mapping network's normalisation: its eps keeps it finite
    x = torch.cat([torch.zeros(1, 8), torch.randn(1, 8) * 3])
    expected = torch.cat([torch.zeros(1, 8), x[1:] / x[1:].square().mean().sqrt()])
    torch.testing.assert_close(normalize_2nd_moment(x), expected)


@pytest.mark.parametrize(
    ("act", "gain", "clamp"), [("lrelu", 2.0, None), ("linear", 0.0, None), ("lrelu", SQRT2, 1.0), ("linear", 1.0, 0.5)]
)
def test_bias_act_is_bias_then_activation_then_gain_then_clamp(act, gain, clamp):
    g = torch.Generator().manual_seed(0)
    x, b = torch.randn(2, 3, 4, 5, generator=g, dtype=torch.float64) * 2, torch.randn(3, generator=g).double()
    expected = x + b.reshape(1, 3, 1, 1)
    expected = torch.where(expected >= 0, expected, 0.2 * expected) if act == "lrelu" else expected
    expected = expected * gain
    expected = (
        expected if clamp is None else torch.minimum(torch.maximum(expected, torch.tensor(-clamp)), torch.tensor(clamp))
    )
    torch.testing.assert_close(bias_act(x, b, act, gain, clamp), expected, rtol=0, atol=1e-12)


def test_fully_connected_layer_initialisation_gives_unit_variance_effective_weights_and_the_bias_asked_for():
    # stored N(0, 1/lr_multiplier^2), used times lr_multiplier / sqrt(in): He's initialisation at any multiplier
    torch.manual_seed(0)
    layer = FullyConnectedLayer(256, 64, lr_multiplier=0.01)
    assert layer.weight.std().item() == pytest.approx(100, rel=0.05)
    assert (layer.weight * layer.weight_gain).std().item() == pytest.approx(1 / 16, rel=0.05)
    assert torch.equal(layer.bias, torch.zeros(64))
    assert torch.equal(FullyConnectedLayer(4, 3, bias_init=1.0).bias, torch.ones(3))


def _with_bias(layer: Conv2dLayer, seed: int) -> Conv2dLayer:
    with torch.no_grad():
        layer.bias.copy_(torch.randn(layer.bias.shape, generator=torch.Generator().manual_seed(seed)))
    return layer


def test_conv_layer_by_winograd_adds_its_bias_like_the_reference():
    torch.manual_seed(0)
    layer = _with_bias(Conv2dLayer(4, 3, 3), seed=1)  # three outputs for a batch of two: a misplaced bias cannot fit
    layer.winograd = True
    x = torch.randn(2, 4, 8, 8)
    expected = conv_reference(x.double(), layer.weight.detach().double(), layer.bias.detach().double(), down=False)
    torch.testing.assert_close(layer(x).detach().double(), expected, rtol=1e-5, atol=1e-5)


def test_upsampling_1x1_conv_layer_adds_its_bias_after_upsampling():
    torch.manual_seed(0)
    layer = _with_bias(Conv2dLayer(4, 3, 1, up=True), seed=1).double()
    x = torch.randn(2, 4, 5, 6, dtype=torch.float64)
    expected = upconv1x1_reference(x, layer.weight.detach()) + layer.bias.detach().reshape(1, 3, 1, 1)
    assert expected.shape == (2, 3, 10, 12)
    torch.testing.assert_close(layer(x).detach(), expected, rtol=1e-10, atol=1e-10)


def test_conv_layer_clamps_to_conv_clamp_times_its_gain():
    # the residual blocks call their layers with gain sqrt(1/2): the clamp scales with the output
    torch.manual_seed(0)
    layer = _with_bias(Conv2dLayer(4, 3, 3, "lrelu", conv_clamp=0.5), seed=1).double()
    x = torch.randn(2, 4, 6, 6, dtype=torch.float64) * 4
    z = conv_reference(x, layer.weight.detach(), layer.bias.detach(), down=False)
    limit = 0.5 * SQRT_HALF
    expected = (lrelu(z) * SQRT_HALF).clamp(min=-limit, max=limit)
    assert (expected == limit).any() and (expected == -limit).any()
    torch.testing.assert_close(layer(x, gain=SQRT_HALF).detach(), expected, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("fused", [False, True])
def test_modulated_conv2d_with_a_5x5_kernel_and_a_batch_of_two_matches_the_reference(fused):
    # fused, the batch becomes the convolution's groups: two samples are the smallest batch that shows it
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 4, 5, 6, generator=g, dtype=torch.float64)
    weight = torch.randn(3, 4, 5, 5, generator=g, dtype=torch.float64)
    styles = torch.randn(2, 4, generator=g, dtype=torch.float64) + 1
    ours = modulated_conv2d(x, weight, styles, fused=fused)
    ref = modconv_reference(x, weight, styles, True, False)
    assert ours.shape == ref.shape == (2, 3, 5, 6)
    torch.testing.assert_close(ours, ref, rtol=1e-10, atol=1e-10)


def test_modulated_conv2d_fast_takes_the_winograd_path_and_matches_the_reference(monkeypatch):
    g = torch.Generator().manual_seed(2)
    x, weight = torch.randn(2, 4, 8, 8, generator=g), torch.randn(3, 4, 3, 3, generator=g)
    styles = torch.randn(2, 4, generator=g) + 1
    calls = []
    monkeypatch.setattr(winograd, "conv3x3", lambda *args, real=winograd.conv3x3: calls.append(args) or real(*args))
    ours = modulated_conv2d(x, weight, styles, fast=True)
    ref = modconv_reference(x.double(), weight.double(), styles.double(), True, False)
    assert len(calls) == 1
    torch.testing.assert_close(ours.double(), ref, rtol=1e-5, atol=1e-5)


def test_modulated_conv2d_fp16_is_finite_wherever_its_result_fits_fp16():
    # the worst case: every product aligned. Scaled to 1/sqrt(fan_in) of the largest weight, the sum before
    # demodulation is at most sqrt(fan_in) * max|x|; here that is about 0.8 of fp16's largest value, so any larger
    # pre-scale overflows it
    g = torch.Generator().manual_seed(3)
    x = 8000 * (1 + 0.05 * torch.rand(1, 4, 5, 5, generator=g))
    weight = 1 + 0.05 * torch.rand(3, 4, 3, 3, generator=g)
    styles = 1 + 0.05 * torch.rand(1, 4, generator=g)
    ours = modulated_conv2d(x.half(), weight, styles)
    ref = modconv_reference(x.double(), weight.double(), styles.double(), True, False)
    assert ref.abs().max() < torch.finfo(torch.float16).max
    torch.testing.assert_close(ours.double(), ref, rtol=2e-3, atol=0)
