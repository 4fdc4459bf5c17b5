import numpy as np
import PIL.Image
import pytest
import torch

from ganforge.metrics import compute_metric
from ganforge.metrics.swd import _blur, laplacian_pyramid, num_levels, sliced_wasserstein


def test_sliced_wasserstein_of_a_shifted_set_is_the_mean_projected_shift():
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(500, 6, generator=gen)
    dirs = torch.randn(256, 6, generator=gen)
    dirs /= dirs.norm(dim=1, keepdim=True)
    assert sliced_wasserstein(a, a.clone(), dirs) == 0
    values = []
    for length in (0.5, 1.0, 2.0):
        shift = length * torch.tensor([1.0, -2.0, 0.5, 0.0, 1.0, 3.0]) / 3.9
        expected = (dirs @ shift).abs().mean().item()
        values.append(sliced_wasserstein(a, a + shift, dirs))
        assert values[-1] == pytest.approx(expected, rel=1e-4)
    assert values[0] < values[1] < values[2]


def test_laplacian_pyramid_reconstructs_the_image():
    gen = torch.Generator().manual_seed(1)
    image = torch.rand(2, 3, 32, 32, generator=gen)
    bands = laplacian_pyramid(image, num_levels(32))
    assert [b.shape[-1] for b in bands] == [32, 16]
    up = torch.zeros_like(image)
    up[:, :, ::2, ::2] = bands[1]
    torch.testing.assert_close(bands[0] + _blur(up, gain=16.0), image)
    assert num_levels(8) == 1 and num_levels(16) == 1 and num_levels(64) == 3


def _folder(path, images):
    path.mkdir()
    for i, img in enumerate(images):
        PIL.Image.fromarray(img).save(path / f"{i:03d}.png")
    return path


def test_swd_is_zero_for_identical_sets_and_grows_with_noise(tmp_path):
    rng = np.random.default_rng(0)
    base = [rng.integers(40, 216, (32, 32, 3)).astype(np.uint8) for _ in range(6)]
    real = _folder(tmp_path / "real", base)
    results = []
    for sigma in (0, 10, 40):
        noisy = [np.clip(b + rng.normal(0, sigma, b.shape), 0, 255).astype(np.uint8) for b in base]
        fake = _folder(tmp_path / f"fake{sigma}", noisy)
        r = compute_metric("swd16k", real=real, fake=fake, cache_dir=tmp_path / "cache", progress=False)
        assert r["num_real"] == r["num_fake"] == 6 and r["protocol"].startswith("laplacian")
        assert set(r["results"]) == {"swd16k_32", "swd16k_16", "swd16k_avg"}
        results.append(r["results"]["swd16k_avg"])
    assert results[0] == pytest.approx(0, abs=1e-6)
    assert results[0] < results[1] < results[2]
