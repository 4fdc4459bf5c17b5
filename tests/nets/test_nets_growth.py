"""Progressive growing in StyleGAN2's G and D (nets/growth.py; Karras et al. 2018, Sec. 3): the reals' resampling
against a slow FIR reference, G's image linear in the fade and both networks continuous where a fade starts and
ends, D's fade against a hand-wired pass, fully grown networks equal to the standard ones, the layers growth adds,
and the stage recorded, rebuilt and checked like every architecture argument a file holds."""

import math

import numpy as np
import pytest
import torch

from ganforge.errors import UserError
from ganforge.limits import architecture_problems
from ganforge.nets import Discriminator, Generator
from ganforge.nets.growth import blended_reals, resized, scheduled_stage
from ganforge.nets.layers import downsample2d, fir_kernel

ARCH = dict(resolution=32, img_channels=3, channel_base=256, channel_max=16)
G_ARCH = ARCH | dict(z_dim=8, w_dim=8, mapping_layers=2)
ARCHITECTURES = ("orig", "skip", "resnet")
TAPS = np.array([1.0, 3.0, 3.0, 1.0]) / 8  # the separable [1, 3, 3, 1] filter, normalised per axis


def _along_last_two(fn, x: np.ndarray) -> np.ndarray:
    """A 1-D operation applied along the width, then along the height (the filter is separable)."""
    x = np.apply_along_axis(fn, -1, x)
    return np.swapaxes(np.apply_along_axis(fn, -1, np.swapaxes(x, -1, -2)), -1, -2)


def slow_down(x: np.ndarray) -> np.ndarray:
    """2x FIR downsampling written out: pad 1 each side, out[i] = sum_a taps[a] x[2i + a]."""

    def down(row):
        padded = np.pad(row, 1)
        return np.array([sum(TAPS[a] * padded[2 * i + a] for a in range(4)) for i in range(len(row) // 2)])

    return _along_last_two(down, x)


def slow_up(x: np.ndarray) -> np.ndarray:
    """2x FIR upsampling written out: zeros between samples, pad 2 before and 1 after, filter with gain 2 per axis."""

    def up(row):
        spread = np.zeros(2 * len(row))
        spread[::2] = row
        padded = np.pad(spread, (2, 1))
        return np.array([sum(2 * TAPS[a] * padded[p + a] for a in range(4)) for p in range(2 * len(row))])

    return _along_last_two(up, x)


def test_reals_at_a_stage_are_the_fir_resampling_and_blend_with_the_coarser_stage_during_a_fade():
    img = torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    ref = img.double().numpy()
    f = fir_kernel()
    down16, down8 = slow_down(ref), slow_down(slow_down(ref))
    np.testing.assert_allclose(resized(img, 8, f).numpy(), down8, atol=1e-5)
    np.testing.assert_allclose(blended_reals(img, 16, 1.0, f).numpy(), down16, atol=1e-5)
    expected = 0.25 * down16 + 0.75 * slow_up(slow_down(down16))  # lerp(coarse, fine, fade 0.25)
    np.testing.assert_allclose(blended_reals(img, 16, 0.25, f).numpy(), expected, atol=1e-5)
    np.testing.assert_allclose(resized(img[:, :, ::4, ::4], 32, f).numpy(), slow_up(slow_up(ref[:, :, ::4, ::4])),
                               atol=1e-5)  # fmt: skip


def _generator(architecture: str, **extra) -> Generator:
    torch.manual_seed(0)
    return Generator(**G_ARCH, architecture=architecture, **extra)


def _images(G: Generator, full_size: bool = True) -> torch.Tensor:
    z = torch.randn(3, 8, generator=torch.Generator().manual_seed(1))
    return G.synthesis(G.mapping(z, None), noise_mode="const", full_size=full_size)


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_g_image_is_linear_in_the_fade_and_continuous_where_a_fade_starts_and_ends(architecture):
    """ProGAN Fig. 2b: while 16 px fades in, the image is (1 - a) x the 8 px image upsampled + a x the 16 px one."""
    G = _generator(architecture, progressive=True)
    images = {}
    for fade in (0.0, 0.3, 1.0):
        G.set_stage([16, fade])
        images[fade] = _images(G, full_size=False)
    torch.testing.assert_close(images[0.3], torch.lerp(images[0.0], images[1.0], 0.3), atol=1e-5, rtol=0)
    G.set_stage([8, 1.0])
    coarse = _images(G)
    G.set_stage([16, 0.0])
    assert torch.equal(_images(G), coarse)  # a fade starts where the previous stage left off
    assert images[1.0].shape[-1] == 16 and coarse.shape[-1] == 32  # consumers get the network's resolution


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_fully_grown_networks_are_the_standard_ones_without_the_layers_growth_added(architecture):
    G, G_std = _generator(architecture, progressive=True), _generator(architecture)
    weights = G.state_dict()
    G_std.load_state_dict({key: weights[key] for key in G_std.state_dict()})
    G.set_stage([32, 1.0])
    assert torch.equal(_images(G), _images(G_std)) and "stage" not in G.config
    D, D_std = (
        Discriminator(**ARCH, architecture=architecture, progressive=True),
        Discriminator(**ARCH, architecture=architecture),
    )
    weights = D.state_dict()
    D_std.load_state_dict({key: weights[key] for key in D_std.state_dict()})
    img = torch.randn(4, 3, 32, 32)
    assert torch.equal(D(img, None), D_std(img, None))


def _image_layer_count(module, w_dim: int = 0) -> int:
    """Parameters of one toRGB (modulated 1x1: style affine w_dim -> C, weight 3 x C, bias 3) or fromRGB (1x1: 3 -> C
    and bias C) at C channels."""
    channels = 16
    return w_dim * channels + channels + 3 * channels + 3 if module == "torgb" else 3 * channels + channels


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_growth_adds_an_image_layer_at_every_lower_resolution_where_the_layout_lacks_one(architecture):
    """At 32 px with cbase 256, cmax 16 every block has 16 channels; blocks 4, 8 and 16 of G and 8 and 16 of D get
    their own toRGB / fromRGB (a skip layout has them already)."""

    def count(net):
        return sum(p.numel() for p in net.parameters())

    extra = 0 if architecture == "skip" else 1
    added_g = count(_generator(architecture, progressive=True)) - count(_generator(architecture))
    assert added_g == extra * 3 * _image_layer_count("torgb", w_dim=8)
    added_d = count(Discriminator(**ARCH, architecture=architecture, progressive=True)) - count(
        Discriminator(**ARCH, architecture=architecture)
    )
    assert added_d == extra * 2 * _image_layer_count("fromrgb")


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_d_fades_out_its_previous_entry_as_the_hand_wired_pass_does_and_is_continuous(architecture):
    torch.manual_seed(0)
    D = Discriminator(**ARCH, architecture=architecture, progressive=True)
    img16 = resized(torch.randn(4, 3, 32, 32), 16, fir_kernel())
    D.set_stage([8, 1.0])
    coarse = D(resized(img16, 8, fir_kernel()), None)
    D.set_stage([16, 0.0])
    assert torch.equal(D(img16, None), coarse)
    D.set_stage([16, 0.4])
    x16, _ = D.b16(None, img16)
    img8 = downsample2d(img16, fir_kernel())
    if architecture == "skip":  # every block adds its fromRGB; the new block's features come in x fade
        x8, img4 = D.b8(0.4 * x16, img8)
    else:  # the entry moves from fromRGB at 8 px to the 16 px block: lerp(fromRGB_8, block_16, fade)
        x8, img4 = D.b8(torch.lerp(D.b8.fromrgb(img8), x16, 0.4), None)
    torch.testing.assert_close(D(img16, None), D.b4(x8, img4, None), atol=1e-6, rtol=0)


def test_the_stage_is_recorded_rebuilt_and_checked_like_every_argument_a_file_holds():
    G = _generator("skip", progressive=True)
    G.set_stage([16, 0.5])
    assert G.config["stage"] == [16, 0.5] and G.config["progressive"] is True
    rebuilt = Generator(**G.config)
    assert rebuilt.synthesis.stage == (16, 0.5)
    assert architecture_problems(G.config) == []
    arch = {key: value for key, value in G.config.items() if key != "stage"}
    bad = ([12, 1.0], [16, 1.5], [8, 0.5], [64, 1.0], [16, math.nan], "16", [16, 0.5, 1], [True, 1.0])
    for stage in bad:
        (problem,) = architecture_problems(arch | {"stage": stage})
        assert problem.startswith("stage=") and "must be [resolution, fade]" in problem, problem
        with pytest.raises(UserError):
            Generator(**arch | {"stage": stage})
    no_growth = {key: value for key, value in arch.items() if key != "progressive"}
    assert architecture_problems(no_growth | {"stage": [16, 0.5]}) == [
        "stage=[16, 0.5]: needs a progressive network (progressive=True)"
    ]
    assert architecture_problems(arch | {"progressive": 1}) == ["progressive=1: must be true or false"]


def test_the_schedule_alternates_stable_and_fading_periods_up_to_the_data_resolution():
    """From 8 px with 1 kimg periods to 32 px: 8 px [0, 1000), fade 16 [1000, 2000), 16 px [2000, 3000), fade 32
    [3000, 4000), then 32 px for good; the fade is the share of its period done."""
    expected = {0: (8, 1.0), 999: (8, 1.0), 1000: (16, 0.0), 1250: (16, 0.25), 2000: (16, 1.0), 2999: (16, 1.0),
                3000: (32, 0.0), 3900: (32, 0.9), 4000: (32, 1.0), 10**7: (32, 1.0)}  # fmt: skip
    assert {nimg: scheduled_stage(8, 1.0, 32, nimg) for nimg in expected} == expected
    assert scheduled_stage(16, 0.6, 32, 900) == (32, 0.5)
