import io

import numpy as np
import pytest
from data_testfiles import bad_files, convertible_files, pixels
from PIL import Image

from ganforge.data import images
from ganforge.limits import MAX_RESOLUTION, MIN_RESOLUTION, RESOLUTIONS


def load(data, channels=3):
    return images.to_array(images.decode(data), channels)


@pytest.mark.parametrize("name", sorted(set(bad_files()) - {"dup.png", "tiny.png"}))
def test_undecodable_files_are_bad(name):
    with pytest.raises(images.BadImage):
        images.decode(bad_files()[name])


def test_exif_orientation_is_applied():
    array = load(convertible_files()["rotated.jpg"])
    assert array.shape == (16, 8, 3)  # stored 16 wide x 8 high, displayed rotated


@pytest.mark.parametrize(
    "orientation, display",
    [(2, np.fliplr), (3, lambda a: np.rot90(a, 2)), (6, lambda a: np.rot90(a, -1)), (8, lambda a: np.rot90(a, 1))],
)
def test_exif_orientation_turns_the_way_the_tag_says(orientation, display):
    """EXIF 274: 2 mirrored, 3 upside down, 6 shown after a quarter turn clockwise, 8 counter-clockwise (lossless PNG,
    so the pixels must match exactly)."""
    stored = np.random.default_rng(orientation).integers(0, 256, (4, 8, 3), dtype=np.uint8)
    exif = Image.Exif()
    exif[0x0112] = orientation
    array = load(encode_png_with_exif(stored, exif))
    assert np.array_equal(array, display(stored))


def encode_png_with_exif(pixels, exif) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG", exif=exif)
    return buffer.getvalue()


@pytest.mark.parametrize("cmyk", [(255, 0, 0, 0), (0, 128, 255, 64), (30, 60, 90, 120)])
def test_cmyk_colours_convert_by_the_standard_formula(cmyk):
    """R = 255 (1 - C)(1 - K), likewise G from M and B from Y, on a flat JPEG (within JPEG rounding)."""
    buffer = io.BytesIO()
    Image.new("CMYK", (8, 8), cmyk).save(buffer, format="JPEG", quality=100)
    c, m, y, k = (v / 255 for v in cmyk)
    expected = [255 * (1 - c) * (1 - k), 255 * (1 - m) * (1 - k), 255 * (1 - y) * (1 - k)]
    array = load(buffer.getvalue())
    assert np.abs(array.reshape(-1, 3) - expected).max() <= 2, (array[0, 0], expected)


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
    conversion = images.Conversion(channels=3, size=(8, 8), transform=transform)
    if ok:
        assert images.fit(source, conversion).shape == (8, 8, 3)
    else:
        with pytest.raises(images.BadImage, match="too small"):
            images.fit(source, conversion)


def test_pad_keeps_black_borders():
    out = images.fit(np.full((4, 8, 3), 200, np.uint8), images.Conversion(size=(8, 8), transform="pad"))
    assert (out[:2] == 0).all() and (out[2:6] == 200).all() and (out[6:] == 0).all()


@pytest.mark.parametrize(("width", "height"), [(4, 4), (12, 12), (2048, 2048), (16, 12), (16, 4)])
def test_images_taken_as_they_are_need_a_size_train_takes(width, height):
    """Without --resolution an image keeps its size, so it must be one `train` takes: limits.py's rule, not one of
    the reader's own."""
    with pytest.raises(images.BadImage, match=f"size {width}x{height}: a side is not {RESOLUTIONS}"):
        images.fit(np.zeros((height, width, 1), np.uint8), images.Conversion(channels=1, transform="none"))


@pytest.mark.parametrize("side", [MIN_RESOLUTION, MAX_RESOLUTION])
def test_the_limits_sides_are_taken_as_they_are(side):
    array = np.zeros((side, side, 1), np.uint8)
    assert images.fit(array, images.Conversion(channels=1, transform="none")).shape == (side, side, 1)


@pytest.mark.parametrize(("shape", "size", "kept"), [((30, 50), (16, 8), (slice(2, 27), slice(0, 50))),
                                                     ((50, 30), (8, 16), (slice(0, 50), slice(2, 27)))])  # fmt: skip
def test_center_crop_to_a_non_square_size_keeps_the_centred_box_of_its_aspect(shape, size, kept):
    """A 50x30 photo to 16x8 (2:1): the centred 50x25 band, scaled; and the same turned a quarter."""
    source = np.random.default_rng(1).integers(0, 256, (*shape, 3), dtype=np.uint8)
    out = images.fit(source, images.Conversion(size=size, transform="center-crop", resize_filter="box"))
    assert out.shape == (size[1], size[0], 3)
    band = Image.fromarray(source[kept]).resize(size, Image.Resampling.BOX)
    assert np.array_equal(out, np.asarray(band))
    padded = images.fit(np.full((8, 8, 3), 99, np.uint8), images.Conversion(size=(16, 8), transform="pad"))
    assert (padded[:, :4] == 0).all() and (padded[:, 4:12] == 99).all() and (padded[:, 12:] == 0).all()
    assert images.fit(np.zeros((8, 16, 1), np.uint8), images.Conversion(channels=1, transform="none")).shape == (
        8,
        16,
        1,
    )
