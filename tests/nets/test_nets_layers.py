"""Reference tests for the numerical building blocks: FIR resampling and modulated convolution."""

import pytest
import torch
from nets_reference import apply_reference, modconv_reference

from ganforge.nets.layers import downsample2d, fir_kernel, modulated_conv2d, normalize_2nd_moment, upsample2d


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
