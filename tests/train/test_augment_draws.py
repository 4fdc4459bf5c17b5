"""ADA's random draws (Karras et al. 2020, appendix B): the probabilities and ranges of the transforms' parameters, and
the resampling filters at the smallest image sizes, from the ops' own functions on seeded generators."""

import pytest
import torch

from ganforge.augment import ops

ONE = torch.tensor(1.0)


def _generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_coins_are_fair_and_a_non_square_frame_half_turns_half_the_time():
    """At p = 1 the x-flip and the luma flip each happen on a fair coin, and a non-square image, which cannot take a
    quarter turn, takes a half turn as often as not (a biased coin, or half turns only from turns 3 of 4, fails)."""
    n, g = 4000, _generator(2)
    flipped = ops.blit_matrices(("xflip",), n, 16, 16, ONE, g)[:, 0, 0] == -1
    half_turned = ops.blit_matrices(("rotate90",), n, 8, 16, ONE, g)[:, 0, 0] == -1
    luma_flipped = ops.color_matrices(("lumaflip",), n, 3, ONE, g)[:, 0, 0] != 1
    for event in (flipped, half_turned, luma_flipped):
        assert abs(event.float().mean().item() - 0.5) < 0.04


def test_rotation_angles_are_uniform_on_the_circle():
    """theta ~ U(-pi, pi) for each rotation: at p = 1 both rotations apply and their composed angle is uniform on the
    circle, so its first two circular moments vanish. Angles from a narrower interval, a constant, or an interval
    longer than one turn (which covers part of the circle twice) leave a moment of 0.045 or more."""
    inverse = ops.geometric_matrices(("rotate",), 50_000, 16, 16, ONE, _generator(3))
    angle = torch.atan2(inverse[:, 1, 0], inverse[:, 0, 0])
    for k in (1, 2):
        assert abs(torch.cos(k * angle).mean().item()) < 0.02
        assert abs(torch.sin(k * angle).mean().item()) < 0.02


def test_p_0_never_transforms_even_on_a_draw_of_exactly_0():
    """A transform applies where its uniform draw u < p. torch.rand returns exactly 0.0 once in 2^24 draws (one batch
    of 64 in 260,000): that image must stay untouched at p = 0, which ADA starts from, yet moves at any p above 0."""
    n = 65_536
    seed = next(s for s in range(10_000) if (torch.rand(n, generator=_generator(s)) == 0).any())

    def scaled(p):
        inverse = ops.geometric_matrices(("scale",), n, 4, 4, torch.tensor(p), _generator(seed))
        return (inverse != torch.eye(3)).flatten(1).any(dim=1)

    assert scaled(1e-30).sum() == 1  # the zero is the scale's own draw
    assert not scaled(0.0).any()


@pytest.mark.parametrize(("height", "width"), [(4, 4), (4, 8)])
def test_resample_works_on_images_narrower_than_twice_its_padding(height, width):
    """The 12-tap filters pad 3 and 5 pixels each side, more than half of a 4-pixel side: the mirrored border must still
    be a full mirror. A constant image stays constant under any warp, and a half turn is the unmoved image's half
    turn (the pipeline is symmetric)."""
    f, g = ops.lanczos_filter(), _generator(4)
    x = torch.rand(2, 3, height, width, generator=g) * 2 - 1
    eye = torch.eye(3).expand(2, 3, 3)
    half_turn = torch.diag(torch.tensor([-1.0, -1.0, 1.0])).expand(2, 3, 3)
    turned = ops.resample(x, half_turn, f)
    assert turned.shape == x.shape
    torch.testing.assert_close(turned, torch.rot90(ops.resample(x, eye, f), 2, (-2, -1)), rtol=0, atol=1e-5)
    inverse = ops.geometric_matrices(("scale", "rotate", "xfrac"), 2, height, width, ONE, g)
    grey = torch.full((2, 1, height, width), 0.25)
    torch.testing.assert_close(ops.resample(grey, inverse, f), grey, rtol=0, atol=1e-6)
