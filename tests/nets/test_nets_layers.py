"""Reference tests for the numerical building blocks: FIR resampling and modulated convolution."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from ganforge.nets.layers import downsample2d, fir_kernel, modulated_conv2d, normalize_2nd_moment, upsample2d


def upfirdn_reference(x: np.ndarray, up: int, down: int, pad: tuple[int, int], gain: float) -> np.ndarray:
    """Textbook FIR resampling of one 2D image: zero insertion, padding, explicit 2D convolution, decimation."""
    taps = np.array([1.0, 3.0, 3.0, 1.0])
    f = np.outer(taps, taps) / np.outer(taps, taps).sum() * gain
    z = np.zeros((x.shape[0] * up, x.shape[1] * up))
    z[::up, ::up] = x
    z = np.pad(z, (pad, pad))
    k = f.shape[0]
    out = np.zeros((z.shape[0] - k + 1, z.shape[1] - k + 1))
    for i in range(out.shape[0]):
        for j in range(out.shape[1]):
            for a in range(k):
                for b in range(k):
                    out[i, j] += z[i + a, j + b] * f[k - 1 - a, k - 1 - b]  # convolution: flipped filter
    return out[::down, ::down]


def apply_reference(x: torch.Tensor, **kwargs) -> torch.Tensor:
    """upfirdn_reference over every [N, C] image of a tensor."""
    out = [[upfirdn_reference(img.numpy(), **kwargs) for img in sample] for sample in x.double()]
    return torch.tensor(np.array(out))


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


def modconv_reference(x, weight, styles, demodulate, up):
    """Per-sample loop with plain convolutions and a hand-built transposed convolution."""
    out = []
    k = weight.shape[-1]
    for i in range(x.shape[0]):
        w = weight * styles[i].reshape(1, -1, 1, 1)  # StyleGAN2 Eq. 1
        if demodulate:
            w = w / (w.square().sum(dim=[1, 2, 3], keepdim=True) + 1e-8).sqrt()  # Eq. 3
        xi = x[i : i + 1]
        if up:
            z = torch.zeros(1, xi.shape[1], 2 * xi.shape[2] - 1, 2 * xi.shape[3] - 1, dtype=x.dtype)
            z[..., ::2, ::2] = xi  # zero insertion, then full convolution == transposed conv with stride 2
            y = F.conv2d(F.pad(z, [k - 1] * 4), w.flip(-1, -2))
            y = apply_reference(y, up=1, down=1, pad=(1, 1), gain=4.0)
        else:
            y = F.conv2d(xi, w, padding=k // 2)
        out.append(y)
    return torch.cat(out)


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
