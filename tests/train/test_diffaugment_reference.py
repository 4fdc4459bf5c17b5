"""DiffAugment against slow per-image, per-pixel references that take the same seeded draws, and the exact ranges of
its translations and cutout squares on tiny images whose pixel values all differ."""

import itertools

import torch
from test_diffaugment import _shift

from ganforge.augment import diffaugment


def _color_reference(image: torch.Tensor, brightness: float, saturation: float, contrast: float) -> torch.Tensor:
    """Zhao et al. 2020, Sec. 3 "Color", one pixel at a time: add the brightness, scale each pixel's channels about
    their mean by the saturation, then every value about the image's mean by the contrast."""
    out = image + brightness
    channels, height, width = out.shape
    for y, x in itertools.product(range(height), range(width)):
        grey = sum(out[k, y, x].item() for k in range(channels)) / channels
        for k in range(channels):
            out[k, y, x] = grey + saturation * (out[k, y, x] - grey)
    mean = out.sum() / out.numel()
    return mean + contrast * (out - mean)


def test_color_is_brightness_saturation_and_contrast_in_their_documented_ranges():
    images = torch.rand([8, 3, 2, 3], generator=torch.Generator().manual_seed(20), dtype=torch.float64) * 2 - 1
    out = diffaugment.color(images, torch.Generator().manual_seed(21))
    draws = torch.Generator().manual_seed(21)  # one U[0, 1) per image for each of the three, in this order
    brightness, saturation, contrast = (torch.rand(8, generator=draws, dtype=torch.float64) for _ in range(3))
    for image, moved, b, s, c in zip(images, out, brightness, saturation, contrast, strict=True):
        expected = _color_reference(image, b.item() - 0.5, 2 * s.item(), 0.5 + c.item())  # U(-.5,.5) U(0,2) U(.5,1.5)
        torch.testing.assert_close(moved, expected)


def test_translation_shifts_by_the_seeded_draws_rows_first():
    """out[y, x] = in[y - ty, x - tx] with ty then tx drawn per image, uniform over whole pixels up to 1/8 of the
    size, rounded half up: 1 for 8 rows, 2 for 12 columns."""
    images = torch.rand([16, 2, 8, 12], generator=torch.Generator().manual_seed(22)) + 1
    out = diffaugment.translation(images, torch.Generator().manual_seed(23))
    draws = torch.Generator().manual_seed(23)
    rows, cols = torch.randint(-1, 2, (16,), generator=draws), torch.randint(-2, 3, (16,), generator=draws)
    for image, moved, dy, dx in zip(images, out, rows, cols, strict=True):
        assert torch.equal(moved, _shift(image, dy.item(), dx.item()))


def test_translation_reaches_every_shift_up_to_an_eighth_rounded_half_up_and_no_further():
    """On 4 x 12 images the limits are 1 row (4 / 8 = 0.5 rounds up) and 2 columns (1.5 rounds up), and the row and
    column shifts are drawn apart: each of the 3 x 5 pairs appears. Every value differs, so a pixel tells its source."""
    height, width = 4, 12
    image = torch.arange(1, height * width + 1, dtype=torch.float32).view(1, height, width)
    out = diffaugment.translation(image.expand(128, -1, -1, -1), torch.Generator().manual_seed(24))
    found = set()
    for moved in out:
        y, x = (moved[0] != 0).nonzero()[0].tolist()
        source_y, source_x = divmod(int(moved[0, y, x].item()) - 1, width)
        shift = (y - source_y, x - source_x)
        assert torch.equal(moved, _shift(image, *shift))
        found.add(shift)
    assert found == set(itertools.product(range(-1, 2), range(-2, 3)))


def test_cutout_squares_are_half_the_size_rounded_half_up_centred_on_every_pixel():
    """On 5 x 4 images the square is 3 rows (2.5 rounds up) by 2 columns, starting side // 2 before its centre pixel,
    cut off by the border: every centre appears, each zeroing exactly one rectangle."""
    out = diffaugment.cutout(torch.ones([400, 1, 5, 4]), torch.Generator().manual_seed(25))
    found = set()
    for image in out[:, 0]:
        rows = tuple(image.eq(0).any(dim=1).nonzero().flatten().tolist())
        cols = tuple(image.eq(0).any(dim=0).nonzero().flatten().tolist())
        assert image.eq(0).sum() == len(rows) * len(cols)  # the zeros fill the rows x columns they touch
        found.add((rows, cols))
    row_spans = [(0, 1), (0, 1, 2), (1, 2, 3), (2, 3, 4), (3, 4)]  # centre row 0 to 4
    col_spans = [(0,), (0, 1), (1, 2), (2, 3)]  # centre column 0 to 3
    assert found == set(itertools.product(row_spans, col_spans))
