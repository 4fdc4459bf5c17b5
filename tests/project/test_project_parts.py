"""The projector's pieces against slow, obvious references: SSIM and PSNR, the noise maps' autocorrelation penalty, the
learning-rate and w-noise schedule, the perceptual distances (a stand-in for NVlabs' VGG16 TorchScript file, the
offline Inception one, pixels), and the target images' cropping and resizing."""

import io
import math

import numpy as np
import PIL.Image
import pytest
import torch
import torch.nn.functional as F

from distinct_helpers import assert_distinct
from ganforge.errors import UserError
from ganforge.metrics import inception
from ganforge.metrics.perceptual import area_downsample, load_perceptual, squared_distance
from ganforge.project import options as settings
from ganforge.project import quality, search
from ganforge.project.targets import target_pixels


def _slow_ssim(a: np.ndarray, b: np.ndarray) -> float:
    """Wang et al. 2004 eq. 13 window by window, channel by channel, in float64 loops."""
    size, sigma = 11, 1.5
    g = np.exp(-((np.arange(size) - 5) ** 2) / (2 * sigma**2))
    window = np.outer(g, g) / np.outer(g, g).sum()
    c1, c2, values = (0.01 * 255) ** 2, (0.03 * 255) ** 2, []
    for ch in range(a.shape[0]):
        for i in range(a.shape[1] - size + 1):
            for j in range(a.shape[2] - size + 1):
                x, y = a[ch, i : i + size, j : j + size], b[ch, i : i + size, j : j + size]
                mx, my = (window * x).sum(), (window * y).sum()
                vx, vy = (window * (x - mx) ** 2).sum(), (window * (y - my) ** 2).sum()
                cov = (window * (x - mx) * (y - my)).sum()
                values.append(((2 * mx * my + c1) * (2 * cov + c2)) / ((mx**2 + my**2 + c1) * (vx + vy + c2)))
    return float(np.mean(values))


def test_ssim_and_psnr_equal_their_definitions():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 256, (2, 3, 16, 14), dtype=np.uint8)
    b = np.clip(a.astype(int) + rng.integers(-20, 21, a.shape), 0, 255).astype(np.uint8)
    ssim = quality.ssim(torch.from_numpy(a), torch.from_numpy(b))
    for i in range(2):
        assert ssim[i] == pytest.approx(_slow_ssim(a[i].astype(float), b[i].astype(float)), abs=1e-10)
        mse = ((a[i].astype(float) - b[i]) ** 2).mean()
        assert quality.psnr(torch.from_numpy(a), torch.from_numpy(b))[i] == pytest.approx(10 * math.log10(255**2 / mse))
    assert quality.ssim(torch.from_numpy(a), torch.from_numpy(a)) == pytest.approx([1.0, 1.0])
    assert quality.psnr(torch.from_numpy(a), torch.from_numpy(a)) == [math.inf, math.inf]


def _slow_penalty(level: np.ndarray) -> float:
    """StyleGAN2 App. D for one [H, W] map: down to 8 on its short side, (mean of n * n shifted by one pixel)^2 along
    each axis."""
    total = 0.0
    while True:
        total += np.mean(level * np.roll(level, 1, axis=1)) ** 2 + np.mean(level * np.roll(level, 1, axis=0)) ** 2
        if min(level.shape) <= 8:
            return total
        level = level.reshape(level.shape[0] // 2, 2, level.shape[1] // 2, 2).mean((1, 3))


def test_the_noise_penalty_is_per_target_over_the_pyramid():
    shapes = ((32, 32), (8, 8), (8, 16))  # a wide map (a non-square generator's) stops at its short side
    maps = [torch.randn(3, 1, *shape, dtype=torch.float64) for shape in shapes]
    penalty = search.noise_penalty(maps)
    assert_distinct(penalty, "each target's penalty")  # so that another target's maps cannot pass for its own
    for b in range(3):
        expected = sum(_slow_penalty(m[b, 0].numpy()) for m in maps)
        assert penalty[b].item() == pytest.approx(expected, rel=1e-12)
    smooth = torch.ones(1, 1, 16, 16)
    assert search.noise_penalty([smooth]).item() == pytest.approx(4.0)  # 2 axes x 2 levels, each mean 1


def test_the_schedule_ramps_the_rate_up_then_down_and_the_noise_to_zero():
    steps = 1000
    assert search.schedule(0, steps) == (0.0, 1.0)
    rate, noise = search.schedule(25, steps)  # half-way up the 5 % ramp; noise (1 - 0.025 / 0.75)^2
    assert rate == pytest.approx(0.5) and noise == pytest.approx((1 - 0.025 / 0.75) ** 2)
    assert search.schedule(500, steps)[0] == 1.0
    assert search.schedule(875, steps)[0] == pytest.approx(0.5)  # half-way down the cosine of the last 25 %
    assert search.schedule(750, steps)[1] == 0.0 and search.schedule(999, steps)[1] == 0.0
    assert (settings.STEPS, settings.LEARNING_RATE, settings.NOISE_REGULARIZATION) == (1000, 0.1, 1e5)


class _StandInVGG(torch.nn.Module):
    """The call signature of NVlabs' VGG16 LPIPS file, with a fixed random projection as its features."""

    def __init__(self):
        super().__init__()
        self.register_buffer("projection", torch.randn(3 * 4 * 4, 5, generator=torch.Generator().manual_seed(0)))

    def forward(self, x: torch.Tensor, resize_images: bool = True, return_lpips: bool = False) -> torch.Tensor:
        pooled = torch.nn.functional.adaptive_avg_pool2d(x, 4).flatten(1)
        return pooled @ self.projection


@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
def test_a_vgg16_file_is_loaded_as_torchscript_and_anything_else_is_one_error(tmp_path):
    path = tmp_path / "vgg16.pt"
    torch.jit.script(_StandInVGG()).save(str(path))
    features = load_perceptual(str(path), torch.device("cpu"))
    a, b = torch.rand(2, 3, 32, 32) * 255, torch.rand(2, 3, 32, 32) * 255
    expected = (_StandInVGG()(a) - _StandInVGG()(b)).square().sum(1)
    torch.testing.assert_close(squared_distance(features(a), features(b)), expected)
    grey = torch.rand(2, 1, 32, 32) * 255  # two images: a grey batch of one is also expanded by expand(1, 3, ...)
    torch.testing.assert_close(features(grey), _StandInVGG()(grey.expand(-1, 3, -1, -1)))
    not_script = tmp_path / "weights.pkl"
    not_script.write_bytes(b"\x80\x04K\x01.")
    with pytest.raises(UserError, match="not a TorchScript file"):
        load_perceptual(str(not_script), torch.device("cpu"))
    with pytest.raises(UserError, match="cannot be read"):
        load_perceptual(str(tmp_path / "missing.pt"), torch.device("cpu"))


def test_the_pixel_distance_is_the_mean_squared_difference_in_unit_range():
    features = load_perceptual("none", torch.device("cpu"))
    a, b = torch.rand(2, 3, 8, 8) * 255, torch.rand(2, 3, 8, 8) * 255
    expected = ((a / 127.5 - 1) - (b / 127.5 - 1)).square().mean((1, 2, 3))
    torch.testing.assert_close(squared_distance(features(a), features(b)), expected)


def test_the_inception_distance_is_zero_only_for_the_same_image_and_differentiable():
    features = load_perceptual("inception", torch.device("cpu"))
    x = (torch.rand(1, 3, 16, 16) * 255).requires_grad_()
    mine, copy, other = features(torch.cat([x, x.detach(), torch.rand(1, 3, 16, 16) * 255])).split(1)
    assert squared_distance(mine, copy).item() == pytest.approx(0, abs=1e-9)
    distance = squared_distance(mine, other)
    assert distance.item() > 0
    distance.sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0


def _slow_inception_distance(layers, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """LPIPS eq. 1 with unit channel weights, written out at the five depths: the activations of the FID protocol's
    input ((x - 128) / 128 at 299 px), each position's channel vector made unit length, squared differences summed
    over channels, averaged over positions, summed over the depths."""
    activations = {}
    for name, images in (("a", a), ("b", b)):
        x = (inception.tf1_bilinear_resize(images, 299) - 128) / 128
        for depth, layer in layers.named_children():
            x = layer(x)
            activations[name, depth] = x
            if depth == "mixed_10":
                break
    total = torch.zeros(len(a), dtype=torch.float64)
    for depth in ("conv_2", "conv_4", "mixed_2", "mixed_7", "mixed_10"):
        ua, ub = (activations[name, depth].double() for name in "ab")
        ua, ub = (u / u.norm(dim=1, keepdim=True).clamp_min(1e-30) for u in (ua, ub))
        total += (ua - ub).square().sum(1).mean((1, 2))
    return total


def test_the_inception_distance_is_lpips_with_unit_weights_over_five_depths_and_grey_counts_as_three_channels():
    features = load_perceptual("inception", torch.device("cpu"))
    generator = torch.Generator().manual_seed(0)
    a, b = (torch.rand(2, 3, 24, 20, generator=generator) * 255 for _ in range(2))
    expected = _slow_inception_distance(features.layers, a, b)
    torch.testing.assert_close(squared_distance(features(a), features(b)).double(), expected, rtol=1e-4, atol=0)
    grey = torch.rand(2, 1, 24, 20, generator=generator) * 255
    torch.testing.assert_close(features(grey), features(grey.expand(-1, 3, -1, -1)))


def test_images_above_256_px_are_area_averaged_to_256_on_their_short_side_and_the_rest_left_as_they_are():
    large = torch.rand(2, 3, 512, 1024)
    torch.testing.assert_close(area_downsample(large), F.avg_pool2d(large, 2))  # 256 x 512: each 2 x 2 mean
    at_the_side = torch.rand(1, 3, 256, 300)
    assert area_downsample(at_the_side) is at_the_side


def test_a_target_of_any_size_is_centre_cropped_and_resized():
    image = np.zeros((30, 60, 3), np.uint8)
    image[:, 15:45] = 200  # the centred square of a wide image
    buffer = io.BytesIO()
    PIL.Image.fromarray(image).save(buffer, format="PNG")
    pixels = target_pixels(buffer.getvalue(), 16, 3)
    assert pixels.shape == (3, 16, 16) and pixels.min() >= 190  # upscaled from 30 px, only the bright square
    grey = target_pixels(buffer.getvalue(), 8, 1)
    assert grey.shape == (1, 8, 8) and grey.flags.writeable and grey.flags.c_contiguous  # torch takes it silently
