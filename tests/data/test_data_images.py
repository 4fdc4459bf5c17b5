import io

import numpy as np
import pytest
from data_testfiles import bad_files, convertible_files, pixels
from PIL import Image

from ganforge.data import images


def load(data, channels=3):
    return images.to_array(images.decode(data), channels)


@pytest.mark.parametrize("name", sorted(set(bad_files()) - {"dup.png", "tiny.png"}))
def test_undecodable_files_are_bad(name):
    with pytest.raises(images.BadImage):
        images.decode(bad_files()[name])


def test_exif_orientation_is_applied():
    array = load(convertible_files()["rotated.jpg"])
    assert array.shape == (16, 8, 3)  # stored 16 wide x 8 high, displayed rotated


def test_rgba_is_composited_on_white():
    array = load(convertible_files()["rgba.png"])
    source = pixels(200).astype(np.float64)
    expected = source * 128 / 255 + images.ALPHA_BACKGROUND * (1 - 128 / 255)
    assert array.shape == (16, 16, 3) and np.abs(array - expected).max() <= 1


def test_sixteen_bit_is_rescaled_not_clipped():
    source = np.random.default_rng(201).integers(0, 65536, (16, 16)).astype(np.int64)
    array = load(convertible_files()["sixteen.png"], channels=1)
    assert np.array_equal(array[:, :, 0], (source * 255 + 32767) // 65535)


@pytest.mark.parametrize("name", ["cmyk.jpg", "palette.png"])
def test_cmyk_and_palette_become_rgb(name):
    assert load(convertible_files()[name]).shape == (16, 16, 3)


def test_grey_channel_count():
    assert load(convertible_files()["palette.png"], channels=1).shape == (16, 16, 1)


def test_float_images_are_an_unsupported_mode():
    buffer = io.BytesIO()
    Image.fromarray(np.zeros((8, 8), np.float32)).save(buffer, format="TIFF")
    with pytest.raises(images.BadImage, match="unsupported image mode F"):
        load(buffer.getvalue())


@pytest.mark.parametrize(
    ("transform", "shape", "ok"),
    [("center-crop", (12, 20), True), ("center-crop", (7, 20), False), ("pad", (4, 8), True), ("pad", (4, 7), False),
     ("center-crop-wide", (6, 16), True), ("center-crop-wide", (16, 7), False)],
)  # fmt: skip
def test_transforms_give_r_by_r_and_refuse_to_upscale(transform, shape, ok):
    source = np.random.default_rng(0).integers(0, 256, (*shape, 3), dtype=np.uint8)
    conversion = images.Conversion(channels=3, resolution=8, transform=transform)
    if ok:
        assert images.fit(source, conversion).shape == (8, 8, 3)
    else:
        with pytest.raises(images.BadImage, match="too small"):
            images.fit(source, conversion)


def test_pad_keeps_black_borders():
    out = images.fit(np.full((4, 8, 3), 200, np.uint8), images.Conversion(resolution=8, transform="pad"))
    assert (out[:2] == 0).all() and (out[2:6] == 200).all() and (out[6:] == 0).all()
