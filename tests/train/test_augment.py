import itertools
import math

import pytest
import torch

from ganforge.augment import corrupt, ops
from ganforge.augment.pipe import BLIT, COLOR, GEOM, AdaptiveAugment, AugmentPipe
from ganforge.errors import UserError


def _images(n=8, c=3, size=16, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(n, c, size, size, generator=g, dtype=dtype) * 2 - 1).requires_grad_(False)


def _run(preset, x, p=1.0, seed=1):
    torch.manual_seed(seed)
    return AugmentPipe(preset, p=p)(x)


def _mirror_pad(x, pad):
    """Half-sample symmetric padding built from flips: the reference for 'mirrored at the border'."""
    x = torch.cat([x[..., :pad].flip(-1), x, x[..., -pad:].flip(-1)], dim=-1)
    return torch.cat([x[..., :pad, :].flip(-2), x, x[..., -pad:, :].flip(-2)], dim=-2)


@pytest.mark.parametrize("preset", ["bgc", "bgcc"])
def test_p0_is_bitwise_identity(preset):
    """Every transform runs at p = 0 too (a test of p would make a CUDA host wait for the device) and leaves every
    image bitwise as it was."""
    x = _images()
    assert torch.equal(AugmentPipe(preset, p=0.0)(x), x)


def test_unmoved_images_keep_their_values_and_moved_ones_match_alone():
    """At a small p most images are not moved by the geometric group: they keep their input bitwise (no
    resampling blur), and a moved image is the same as when it is augmented alone with the same matrix."""
    x = _images(n=16)
    inverse = ops.geometric_matrices(GEOM, 16, 16, 16, torch.tensor(0.2), torch.Generator().manual_seed(1))
    moved = (inverse != torch.eye(3)).flatten(1).any(dim=1)
    assert 0 < moved.sum() < 16
    pipe = AugmentPipe("geom")
    y = pipe._geometric(x, inverse)
    assert torch.equal(y[~moved], x[~moved])
    alone = ops.resample(x[moved], inverse[moved], pipe.filter)
    assert not torch.equal(y[moved], x[moved])
    torch.testing.assert_close(y[moved], alone, rtol=0, atol=1e-6)


def test_xflip_matches_torch_flip():
    x = _images(n=64)
    y = _run("xflip", x)
    flipped = [torch.equal(yi, xi.flip(-1)) for xi, yi in zip(x, y, strict=True)]
    same = [torch.equal(yi, xi) for xi, yi in zip(x, y, strict=True)]
    assert all(f != s for f, s in zip(flipped, same, strict=True))
    assert 0 < sum(flipped) < 64  # the flip itself is a fair coin (appendix B)


def test_rotate90_matches_torch_rot90():
    x = _images(n=64)
    y = _run("rotate90", x)
    turns = [
        [k for k in range(4) if torch.equal(yi, torch.rot90(xi, k, (-2, -1)))] for xi, yi in zip(x, y, strict=True)
    ]
    assert all(len(k) == 1 for k in turns)
    assert {k[0] for k in turns} == {0, 1, 2, 3}


def test_rotate90_turns_non_square_images_by_half_turns_only():
    """A quarter turn of an 8x16 image would not fit its frame: the blit group turns it by 0 or 2 quarters."""
    x = torch.randn(64, 3, 8, 16)
    y = _run("rotate90", x)
    half = [torch.equal(yi, torch.rot90(xi, 2, (-2, -1))) for xi, yi in zip(x, y, strict=True)]
    same = [torch.equal(yi, xi) for xi, yi in zip(x, y, strict=True)]
    assert all(h != s for h, s in zip(half, same, strict=True)) and 0 < sum(half) < 64


@pytest.mark.parametrize(("height", "width"), [(16, 16), (8, 32)])
def test_integer_translation_matches_mirrored_shift(height, width):
    """Each axis moves by whole pixels, up to 1/8 of its own length (appendix B)."""
    x = torch.rand(64, 3, height, width, generator=torch.Generator().manual_seed(0)) * 2 - 1
    y = _run("xint", x)
    x_limit, y_limit = round(0.125 * width), round(0.125 * height)
    pad = max(x_limit, y_limit)
    padded = _mirror_pad(x, pad)
    shifts = []
    for i in range(len(x)):
        # Forward translation by (tx, ty): out[y, x] = in[y - ty, x - tx].
        matches = [
            (tx, ty)
            for tx, ty in itertools.product(range(-x_limit, x_limit + 1), range(-y_limit, y_limit + 1))
            if torch.equal(y[i], padded[i, :, pad - ty : pad - ty + height, pad - tx : pad - tx + width])
        ]
        assert len(matches) == 1
        shifts += matches
    assert {abs(tx) for tx, _ in shifts} == set(range(x_limit + 1))
    assert {abs(ty) for _, ty in shifts} == set(range(y_limit + 1))


@pytest.mark.parametrize("channels", [1, 3])
def test_brightness_and_contrast_on_constant_image(channels):
    n, a = 4096, 0.25
    x = torch.full((n, channels, 4, 4), a)
    shift = _run("brightness", x)
    assert torch.equal(shift, shift[:, :1, :1, :1].expand_as(shift))  # still constant, channels alike
    assert abs((shift[:, 0, 0, 0] - a).std().item() - 0.2) < 0.01  # b ~ N(0, 0.2^2)
    scaled = _run("contrast", x)[:, 0, 0, 0]
    assert abs(torch.log2(scaled / a).std().item() - 0.5) < 0.025  # c ~ lognormal(0, (0.5 ln 2)^2)


@pytest.mark.parametrize("channels", [1, 3])
def test_lumaflip_negates_grey(channels):
    x = torch.full((64, channels, 4, 4), 0.25)
    y = _run("lumaflip", x)[:, :, 0, 0]
    negated = torch.isclose(y, torch.full_like(y, -0.25), atol=1e-6).all(dim=1)
    kept = torch.equal
    assert all(n or kept(yi, xi[:, 0, 0]) for n, yi, xi in zip(negated, y, x, strict=True))
    assert 0 < negated.sum() < 64


def _luma_chroma(rgb):
    luma = rgb.mean(dim=1)
    return luma, rgb - luma[:, None]


def test_hue_and_saturation_on_constant_colour():
    n = 4096
    colour = torch.tensor([0.5, -0.25, 0.1])
    x = colour[None, :, None, None].expand(n, 3, 2, 2).contiguous()
    luma0, chroma0 = _luma_chroma(colour[None])
    hue = _run("hue", x)[:, :, 0, 0]
    luma, chroma = _luma_chroma(hue)
    assert torch.allclose(luma, luma0, atol=1e-6)  # rotation about the luma axis keeps luma
    assert torch.allclose(chroma.norm(dim=1), chroma0.norm(dim=1), atol=1e-6)
    cos = (chroma @ chroma0[0]) / chroma0.norm() ** 2
    sin = torch.linalg.cross(chroma0.expand_as(chroma), chroma).sum(dim=1) / math.sqrt(3) / chroma0.norm() ** 2
    assert abs(cos.mean().item()) < 0.05  # theta ~ U(-pi, pi): the mean cosine and sine vanish
    assert abs(sin.mean().item()) < 0.05
    sat = _run("saturation", x)[:, :, 0, 0]
    luma, chroma = _luma_chroma(sat)
    assert torch.allclose(luma, luma0, atol=1e-6)
    factor = chroma.norm(dim=1) / chroma0.norm()
    assert torch.allclose(chroma, factor[:, None] * chroma0, atol=1e-5)
    assert abs(torch.log2(factor).std().item() - 1.0) < 0.05  # s ~ lognormal(0, (ln 2)^2)


def test_grey_colour_is_luma_of_rgb_colour():
    x = _images(n=32, c=1)
    grey = _run("color", x)
    rgb = _run("color", x.expand(-1, 3, -1, -1))
    assert torch.allclose(grey, rgb.mean(dim=1, keepdim=True), atol=1e-5)
    assert not torch.allclose(grey, x)


def test_each_transform_applied_with_probability_p():
    n, p = 4000, 0.3
    x = _images(n=n, size=4)
    y = _run("brightness", x, p=p)
    changed = (y != x).flatten(1).any(dim=1).float().mean().item()
    assert abs(changed - p) < 0.03
    # Rotation is split into pre and post rotations of probability 1 - sqrt(1 - p) each (appendix B).
    rot = ops.geometric_matrices(("rotate",), n, 16, 16, torch.tensor(p))
    rotated = (rot != torch.eye(3)).flatten(1).any(dim=1).float().mean().item()
    assert abs(rotated - p) < 0.03


def test_geometric_parameter_distributions():
    n, size = 8000, 16
    p = torch.tensor(1.0)
    scale = ops.geometric_matrices(("scale",), n, size, size, p)
    assert torch.equal(scale[:, 0, 0], scale[:, 1, 1])
    assert abs(torch.log2(scale[:, 0, 0]).std().item() - 0.2) < 0.01
    aniso = ops.geometric_matrices(("aniso",), n, size, size, p)
    assert torch.allclose(aniso[:, 0, 0] * aniso[:, 1, 1], torch.ones(n))
    # On a non-square image each axis moves by its own length times an independent draw.
    shift = ops.geometric_matrices(("xfrac",), n, size // 2, size, p, torch.Generator().manual_seed(0))[:, :2, 2]
    shift = shift / torch.tensor([size, size // 2])
    assert (shift.std(dim=0) - 0.125).abs().max() < 0.006
    assert abs(torch.corrcoef(shift.T)[0, 1].item()) < 0.05


def test_resample_references():
    f = ops.lanczos_filter()
    x = _images(n=2, size=16)
    eye = torch.eye(3).expand(2, 3, 3)
    base = ops.resample(x, eye, f)
    quarter = torch.tensor([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]).expand(2, 3, 3)
    assert torch.allclose(ops.resample(x, quarter, f), torch.rot90(base, 1, (-2, -1)), atol=1e-5)
    one_right = torch.tensor([[1.0, 0.0, -1.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]).expand(2, 3, 3)
    # Away from the border, where mirroring meets the shift, a one-pixel move is exact.
    assert torch.allclose(ops.resample(x, one_right, f)[..., 5:-4], base[..., 4:-5], atol=1e-5)
    # A low-frequency image survives the 2x band-limited round trip; mirroring keeps the border close too.
    yy, xx = torch.meshgrid(torch.arange(32.0), torch.arange(32.0), indexing="ij")
    smooth = torch.cos(2 * math.pi * (1.5 * xx + yy) / 32).expand(1, 1, 32, 32)
    assert (ops.resample(smooth, eye[:1], f) - smooth).abs().max() < 0.01


def test_output_shape_dtype_and_range():
    x = _images(n=16, size=16, dtype=torch.float64)
    y = _run("bgc", x)
    assert y.shape == x.shape and y.dtype == x.dtype and torch.isfinite(y).all()
    assert not torch.allclose(y, x)
    blit = _run("blit", x)
    assert all(torch.isin(bi, xi).all() for bi, xi in zip(blit, x, strict=True))  # pixels moved, never mixed
    # Natural images are smooth: on those the band-limited warp overshoots little, and mirroring adds no black
    # borders, so every image keeps its contrast. (White noise rings more, as under any sharp low-pass.)
    smooth = torch.nn.functional.interpolate(_images(n=64, size=4), size=16, mode="bilinear", align_corners=False)
    geom = _run("geom", smooth)
    assert geom.abs().max() < 1.05
    assert geom.flatten(1).std(dim=1).min() > 0.2


def test_autocast_and_low_precision_do_not_change_the_maths():
    x = _images(n=8, size=16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        under_autocast = _run("bgc", x)
    assert under_autocast.dtype == torch.float32
    assert torch.equal(under_autocast, _run("bgc", x))
    half = _run("bgc", x.bfloat16())
    assert half.dtype == torch.bfloat16
    assert torch.equal(half, _run("bgc", x.bfloat16().float()).bfloat16())


def test_gradients_flow_to_input():
    x = _images(n=2, size=8, dtype=torch.float64).requires_grad_(True)

    def augment(images):
        return AugmentPipe("bgc", p=1.0)(images, generator=torch.Generator().manual_seed(5))

    assert torch.autograd.gradcheck(augment, (x,), eps=1e-6, atol=1e-5, fast_mode=True)
    augment(x).square().sum().backward()
    assert x.grad.abs().sum() > 0


def test_same_seed_same_output():
    x = _images(n=8, size=16)
    assert torch.equal(_run("bgc", x, p=0.7, seed=4), _run("bgc", x, p=0.7, seed=4))
    assert not torch.equal(_run("bgc", x, p=0.7, seed=4), _run("bgc", x, p=0.7, seed=5))
    pipe = AugmentPipe("bgc", p=0.7)
    a = pipe(x, generator=torch.Generator().manual_seed(9))
    assert torch.equal(a, pipe(x, generator=torch.Generator().manual_seed(9)))


def test_unknown_preset_is_user_error():
    with pytest.raises(UserError, match="nope"):
        AugmentPipe("xflip,nope")
    assert AugmentPipe("xflip, hue").ops == ("xflip", "hue")
    with pytest.raises(UserError, match="3-channel"):
        AugmentPipe("color", p=0.5)(_images(c=2))


def _drive(ada, pipe, logits_value, steps, batch=64):
    for _ in range(steps):
        ada.accumulate(torch.full((batch, 1), logits_value))
        ada.update(pipe, batch)


def test_ada_moves_p_by_exact_step():
    ada, pipe = AdaptiveAugment(target=0.6, speed_kimg=500, interval=4), AugmentPipe("bgc", p=0.5)
    step = 64 * 4 / (500 * 1000)
    _drive(ada, pipe, 1.0, 3)
    assert pipe.p.item() == 0.5  # no adjustment before `interval` D steps
    _drive(ada, pipe, 1.0, 1)  # r_t = 1 > 0.6: raise p
    assert pipe.p.item() == pytest.approx(0.5 + step, abs=1e-7)
    assert ada.stats(pipe) == {"p": pipe.p.item(), "rt": 1.0}
    _drive(ada, pipe, -1.0, 4)  # r_t = -1 < 0.6: lower p
    assert pipe.p.item() == pytest.approx(0.5, abs=1e-7)
    ada.accumulate(torch.tensor([[1.0], [-1.0], [1.0], [1.0]]))  # r_t = 0.5 < 0.6 over the whole interval
    _drive(ada, pipe, -1.0, 0)
    for _ in range(4):
        ada.update(pipe, 64)
    assert ada.stats(pipe)["rt"] == 0.5
    assert pipe.p.item() == pytest.approx(0.5 - step, abs=1e-7)


def test_ada_clamps_p():
    ada, pipe = AdaptiveAugment(speed_kimg=0.1, interval=1), AugmentPipe("bgc", p=0.0)
    _drive(ada, pipe, -1.0, 3)
    assert pipe.p.item() == 0.0
    _drive(ada, pipe, 1.0, 5)
    assert pipe.p.item() == 1.0


def test_ada_state_round_trip_is_exact():
    ada, pipe = AdaptiveAugment(), AugmentPipe("bgc", p=0.2)
    _drive(ada, pipe, 1.0, 6)  # mid-interval: accumulators hold two steps
    state = ada.state_dict()
    assert all(isinstance(v, (int, torch.Tensor)) for v in state.values())
    resumed, resumed_pipe = AdaptiveAugment(), AugmentPipe("bgc")
    resumed.load_state_dict(state)
    resumed_pipe.load_state_dict(pipe.state_dict())
    for value in (1.0, -1.0, 1.0):
        _drive(ada, pipe, value, 3)
        _drive(resumed, resumed_pipe, value, 3)
    assert torch.equal(pipe.p, resumed_pipe.p)
    assert ada.stats(pipe) == resumed.stats(resumed_pipe)
    assert pipe.p.item() != 0.2


def test_ada_rejects_bad_settings_all_at_once():
    with pytest.raises(UserError) as info:
        AdaptiveAugment(target=1.5, speed_kimg=0, interval=0)
    assert len(info.value.problems) == 3


def _by_hand(group: str, x: torch.Tensor, p: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """What the pipe must do with `group`'s transforms alone, from the ops' own functions, drawing in its order."""
    n, c, h, w = x.shape
    if group == "blit":
        return ops.apply_blit(x, ops.blit_matrices(BLIT, n, h, w, p, generator))
    if group == "color":
        return ops.apply_color(x, ops.color_matrices(COLOR, n, c, p, generator))
    x = corrupt.apply_filter(x, corrupt.filter_gains(n, p, generator))
    x = corrupt.add_noise(x, p, generator)
    return x * corrupt.cutout_mask(n, h, w, p, generator)


@pytest.mark.parametrize("group", ["blit", "color", "filter,noise,cutout"])
def test_each_group_at_p_1_is_its_ops_applied_in_order(group):
    """At p = 1 every image takes every transform of the group: the pipe's images are the ops' functions applied by
    hand with the same draws (a group skipped, its images kept unchanged, or its operands swapped, fails)."""
    x, p = _images(n=4), torch.tensor(1.0)
    expected = _by_hand(group, x, p, torch.Generator().manual_seed(5))
    torch.testing.assert_close(AugmentPipe(group, p=1.0)(x, generator=torch.Generator().manual_seed(5)), expected)
    assert not torch.equal(expected, x)


def test_ada_starts_at_p_0_keeps_p_without_measurements_and_counts_a_single_logit():
    assert AugmentPipe("bgc").p.item() == 0.0  # ADA starts from no augmentation (Karras et al. 2020, sec. 3)
    ada, pipe = AdaptiveAugment(target=0.6, speed_kimg=500, interval=1), AugmentPipe("bgc", p=0.5)
    ada.update(pipe, 64)  # a D step that saw no reals' logits: nothing to adjust on
    assert pipe.p.item() == 0.5 and math.isnan(ada.stats(pipe)["rt"])
    ada.accumulate(torch.tensor([[2.0]]))  # one logit: r_t = 1 > 0.6
    ada.update(pipe, 64)
    assert ada.stats(pipe)["rt"] == 1.0 and pipe.p.item() == pytest.approx(0.5 + 64 / 500_000, abs=1e-7)


@pytest.mark.parametrize("target", [0.0, 1.0])
def test_an_ada_target_of_0_or_1_is_refused(target):
    with pytest.raises(UserError, match=r"ADA target must be in \(0, 1\)"):
        AdaptiveAugment(target=target)
