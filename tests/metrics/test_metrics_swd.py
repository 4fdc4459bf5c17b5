import numpy as np
import PIL.Image
import pytest
import torch

from ganforge.metrics import compute_metric
from ganforge.metrics.features import position_rng
from ganforge.metrics.swd import (
    _blur,
    laplacian_pyramid,
    level_names,
    normalize_descriptors,
    num_levels,
    sliced_wasserstein,
)


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


def _mirror(i: int, n: int) -> int:
    """Index into 0..n-1 reflected about the border pixels (d c b | a b c d | c b a)."""
    return -i if i < 0 else 2 * (n - 1) - i if i >= n else i


def _binomial_filter(image: np.ndarray, gain: float) -> np.ndarray:
    """One channel convolved with gain x the 5x5 binomial kernel outer([1, 4, 6, 4, 1]) / 256, mirrored borders."""
    taps = [1, 4, 6, 4, 1]
    h, w = image.shape
    out = np.zeros((h, w))
    for y in range(h):
        for x in range(w):
            for a in range(5):
                for b in range(5):
                    out[y, x] += gain * taps[a] * taps[b] / 256 * image[_mirror(y + a - 2, h), _mirror(x + b - 2, w)]
    return out


def _laplacian_reference(image: np.ndarray, levels: int) -> list[np.ndarray]:
    """Burt & Adelson's pyramid as ProGAN's SWD (App. D) uses it, for one channel: REDUCE = binomial blur, keep every
    second sample; EXPAND = zero insertion, binomial blur with gain 4; band = level - EXPAND(next level)."""
    bands, current = [], image
    for _ in range(levels - 1):
        smaller = _binomial_filter(current, 1.0)[::2, ::2]
        inserted = np.zeros_like(current)
        inserted[::2, ::2] = smaller
        bands.append(current - _binomial_filter(inserted, 4.0))
        current = smaller
    return bands + [current]


def test_laplacian_pyramid_matches_the_burt_adelson_reference():
    image = torch.rand(1, 2, 32, 32, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    bands = laplacian_pyramid(image, 2)
    for channel in range(2):
        expected = _laplacian_reference(image[0, channel].numpy(), 2)
        for band, reference in zip(bands, expected, strict=True):
            np.testing.assert_allclose(band[0, channel].numpy(), reference, rtol=0, atol=1e-12)
    constant = laplacian_pyramid(torch.full((1, 1, 32, 32), 0.7), 2)
    assert constant[0].abs().max() < 1e-6  # a flat image has no detail band


def test_laplacian_pyramid_reconstructs_the_image():
    gen = torch.Generator().manual_seed(1)
    image = torch.rand(2, 3, 32, 32, generator=gen)
    bands = laplacian_pyramid(image, num_levels(32))
    assert [b.shape[-1] for b in bands] == [32, 16]
    up = torch.zeros_like(image)
    up[:, :, ::2, ::2] = bands[1]
    torch.testing.assert_close(bands[0] + _blur(up, gain=4.0), image)
    assert num_levels(8) == 1 and num_levels(16) == 1 and num_levels(64) == 3 and num_levels(1024) == 7
    # other sizes: a level larger than 16 px is halved once more (34 -> 17 -> 9), one of 16 or less is the last
    assert num_levels(17) == 2 and num_levels(33) == 2 and num_levels(34) == 3


def test_each_level_is_named_by_the_size_of_its_band():
    """Odd sides round up, as the bands keep every second row and column: 34 px images give bands of 34, 17 and 9."""
    image = torch.rand(1, 1, 34, 68, generator=torch.Generator().manual_seed(2))
    bands = laplacian_pyramid(image, num_levels(34))
    assert [f"{b.shape[-1]}x{b.shape[-2]}" for b in bands] == level_names(34, 68, 3) == ["68x34", "34x17", "17x9"]
    assert level_names(34, 34, 3) == ["34", "17", "9"] and level_names(64, 64, 3) == ["64", "32", "16"]


def test_descriptors_are_normalised_per_colour_channel_and_a_flat_channel_is_zero():
    """Each channel over all descriptors and their 49 pixels: mean 0, standard deviation 1; a channel that never
    varies (a flat colour plane has no detail in any band) is 0, not 0 / 0."""
    gen = torch.Generator().manual_seed(0)
    scale, shift = torch.tensor([[2.0], [0.5], [0.0]]), torch.tensor([[1.0], [-3.0], [4.0]])  # per channel
    desc = torch.randn(300, 3, 49, generator=gen) * scale + shift  # [N, C, 49]
    out = normalize_descriptors(desc.flatten(1).half(), channels=3).view(300, 3, 49)
    torch.testing.assert_close(out.mean(dim=(0, 2)), torch.zeros(3), rtol=0, atol=1e-5)
    torch.testing.assert_close(out[:, :2].std(dim=(0, 2)), torch.ones(2))
    assert torch.equal(out[:, 2], torch.zeros(300, 49))


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
        levels = r["results"]["swd16k_32"], r["results"]["swd16k_16"]
        assert r["results"]["swd16k_avg"] == pytest.approx(sum(levels) / 2)
        results.append(r["results"]["swd16k_avg"])
    assert results[0] == pytest.approx(0, abs=1e-6)
    assert results[0] < results[1] < results[2]


def _swd_reference(sets: list[np.ndarray], seed: int) -> float:
    """ProGAN App. D for 16 px images (one pyramid level, the image itself): 128 7x7 neighbourhoods per image at the
    corners ganforge draws for (seed, image position), as float16 vectors in (channel, row, column) order; each set
    normalised per colour channel by its own mean and standard deviation (n - 1); then the mean over 4 x 512 random
    unit directions of the 1-D Wasserstein-1 distance between the sorted projections, x 1e3."""
    normalised = []
    for images in sets:  # uint8 [N, 16, 16, C]
        pixels = images.astype(np.float32) / np.float32(127.5) - np.float32(1)  # ganforge's uint8 -> [-1, 1]
        patches = []
        for position, image in enumerate(pixels):
            corners = torch.randint(16 - 7 + 1, (128, 2), generator=position_rng(seed, "swd0", position))
            patches += [image[y : y + 7, x : x + 7].transpose(2, 0, 1) for y, x in corners.tolist()]
        d = np.array(patches).astype(np.float16).astype(np.float64)  # [N * 128, C, 7, 7]
        d = (d - d.mean(axis=(0, 2, 3), keepdims=True)) / d.std(axis=(0, 2, 3), ddof=1, keepdims=True)
        normalised.append(d.reshape(len(d), -1))
    directions = torch.randn(4 * 512, normalised[0].shape[1], generator=torch.Generator().manual_seed(seed))
    directions = directions.double().numpy()
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    projected = [np.sort(d @ directions.T, axis=0) for d in normalised]  # [N * 128, directions], sorted per column
    return float(np.abs(projected[0] - projected[1]).mean() * 1e3)


def test_swd_of_one_level_equals_the_progan_reference(tmp_path):
    rng = np.random.default_rng(3)
    real = [rng.integers(0, 256, (16, 16, 3)).astype(np.uint8) for _ in range(3)]
    fake = [np.clip(r.astype(int) // 2 + rng.integers(0, 60, r.shape), 0, 255).astype(np.uint8) for r in real]
    result = compute_metric("swd16k", real=_folder(tmp_path / "real", real), fake=_folder(tmp_path / "fake", fake),
                            cache_dir=tmp_path / "cache", progress=False, seed=5)["results"]  # fmt: skip
    expected = _swd_reference([np.array(real), np.array(fake)], seed=5)
    assert result["swd16k_16"] == pytest.approx(expected, rel=1e-4)
    assert result["swd16k_avg"] == result["swd16k_16"]
