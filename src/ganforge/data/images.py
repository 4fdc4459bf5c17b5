"""Decode, validate and convert one image: the pure, picklable per-file work of the dataset tool and readers.

Everything here works on bytes and numpy arrays (no torch), so `dataset build` can run it in a process pool.
A problem with a file is raised as `BadImage(reason)`; the caller attaches the file name.
"""

import dataclasses
import hashlib
import io
import warnings

import numpy as np
from PIL import ExifTags, Image, ImageOps

from ganforge.limits import MAX_RESOLUTION, RESOLUTIONS, image_size_ok

# Suffixes the tool reads; anything else in a source folder or zip (labels.csv, dataset.json, .DS_Store) is ignored.
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".bmp", ".tif", ".tiff")
TRANSFORMS = ("center-crop", "center-crop-wide", "pad", "none")
RESIZE_FILTERS = {
    "box": Image.Resampling.BOX,
    "lanczos": Image.Resampling.LANCZOS,
    "bicubic": Image.Resampling.BICUBIC,
}
# Transparent pixels are composited on white: transparent images are mostly logos, icons and cut-out products drawn
# for a light page, where black would swallow dark strokes. `--transform pad` fills with black, NVlabs' convention.
ALPHA_BACKGROUND = 255
PAD_FILL = 0
_ALPHA_MODES = ("RGBA", "RGBa", "LA", "La", "PA")
_SIXTEEN_BIT_MODES = ("I;16", "I;16L", "I;16B", "I;16N", "I")
# An image file holds its pixels and some metadata: 16-bit RGBA without compression (8 bytes a pixel) is the most any
# format read here stores per pixel, and headers, EXIF, ICC profiles and text chunks take far less than 16 MiB.
_BYTES_PER_PIXEL, METADATA_BYTES = 8, 16 * 2**20


def max_file_bytes(side: int) -> int:
    """The most bytes an image file of at most `side` x `side` pixels may legitimately take: a zip member or file
    declaring more is refused before a byte of it is read (a 1.5 MB zip can inflate to gigabytes)."""
    return _BYTES_PER_PIXEL * side * side + METADATA_BYTES


def max_source_bytes() -> int:
    """The most bytes `dataset build` reads of one source image: Pillow's largest image (MAX_IMAGE_PIXELS, its
    decompression-bomb limit) at 3 bytes a pixel, plus metadata. Any photo as JPEG or PNG fits; the cap keeps a
    bomb member from being read whole."""
    return 3 * (Image.MAX_IMAGE_PIXELS or 0) + METADATA_BYTES


class BadImage(Exception):
    """A file that cannot become a training image; the message is the reason shown to the user."""


@dataclasses.dataclass(frozen=True)
class Conversion:
    """How every image of a dataset is brought to one shape: `size` (width, height); None keeps the decoded size."""

    channels: int = 3
    size: tuple[int, int] | None = None
    transform: str = "center-crop"
    resize_filter: str = "lanczos"
    # The largest side a file may declare in its header, refused before decoding; None: Pillow's pixel limit only
    # (the readers of a dataset know the side of its images, `dataset build` takes photos of any size).
    max_side: int | None = None


def reader_conversion(channels: int, size: tuple[int, int] | None) -> Conversion:
    """How the readers of a dataset take its images: as they are (no resize), each `size` (width, height: the first
    image's size; None for the first image itself, which may be up to MAX_RESOLUTION on a side)."""
    return Conversion(channels, size, transform="none", max_side=max(size) if size else MAX_RESOLUTION)


def brief(text, limit: int = 160) -> str:
    """`text` cut to `limit` characters: parser messages about a file go into one-line errors."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def is_image_name(name: str) -> bool:
    return name.lower().endswith(IMAGE_SUFFIXES)


def decode(data: bytes, max_side: int | None = None) -> Image.Image:
    """Fully decode `data`, rejecting empty, unidentifiable, truncated, corrupt and decompression-bomb files, and
    files whose header declares a side above `max_side` (checked before any pixel is decoded).

    PIL's LOAD_TRUNCATED_IMAGES stays off, so a truncated file raises instead of decoding as grey padding; verify()
    additionally checks PNG chunk checksums and the end marker, which load() alone does not reach.
    """
    if not data:
        raise BadImage("empty file (0 bytes)")
    with warnings.catch_warnings():
        # PIL only warns between MAX_IMAGE_PIXELS and twice that; a bomb is a bomb either way.
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            header = Image.open(io.BytesIO(data))  # reads the header only
            if max_side is not None and max(header.size) > max_side:
                width, height = header.size
                raise BadImage(
                    f"size {width}x{height}, larger than the {max_side}x{max_side} this dataset's images "
                    "may be (refused before decoding)"
                )
            header.verify()
            image = Image.open(io.BytesIO(data))
            image.load()
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as error:
            raise BadImage(f"decompression bomb: {brief(error)}") from None
        except Image.UnidentifiedImageError:
            raise BadImage("not an image PIL can identify (wrong suffix, or not an image at all)") from None
        # What PIL's plugins raise on a malformed file; IndexError: PNG verify() of a file without image data.
        except (OSError, SyntaxError, ValueError, EOFError, IndexError) as error:
            raise BadImage(f"undecodable or truncated: {brief(error)}") from None
    return image


def to_array(image: Image.Image, channels: int) -> np.ndarray:
    """EXIF orientation, mode conversion and alpha compositing -> uint8 array [H, W, channels]."""
    image = _converted(image, channels)
    return np.asarray(image).reshape(image.height, image.width, channels)


def _converted(image: Image.Image, channels: int) -> Image.Image:
    """EXIF orientation, mode conversion and alpha compositing -> an "L" or "RGB" image. Nothing is copied that needs
    no change: a source image may hold ~89 megapixels, and each copy of it costs a quarter of a GB and a second."""
    try:
        if image.getexif().get(ExifTags.Base.Orientation, 1) != 1:  # exif_transpose copies even when nothing turns
            image = ImageOps.exif_transpose(image)
    except (OSError, SyntaxError, ValueError, KeyError, TypeError) as error:
        raise BadImage(f"unreadable EXIF orientation: {brief(error)}") from None
    if image.mode in _SIXTEEN_BIT_MODES:
        image = _sixteen_to_eight_bit(image)
    if image.mode == "P":
        image = image.convert("RGBA" if "transparency" in image.info else "RGB")
    if image.mode in _ALPHA_MODES:
        rgba = image.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (ALPHA_BACKGROUND,) * 3 + (255,))
        image = Image.alpha_composite(background, rgba).convert("RGB")
    if image.mode not in ("1", "L", "RGB", "CMYK", "YCbCr"):
        raise BadImage(f"unsupported image mode {image.mode}")
    if image.mode != ("L" if channels == 1 else "RGB"):  # convert() copies even an image already in the mode
        image = image.convert("L" if channels == 1 else "RGB")
    return image


def _sixteen_to_eight_bit(image: Image.Image) -> Image.Image:
    """Rescale 16-bit grey to 8 bits; PIL's convert("L") would clip everything above 255 to white."""
    values = np.asarray(image).astype(np.int64)
    if values.min() < 0 or values.max() > 65535:
        raise BadImage(f"unsupported image mode {image.mode} (values outside 0..65535)")
    return Image.fromarray(((values * 255 + 32767) // 65535).astype(np.uint8), mode="L")


def fit(pixels: np.ndarray, conversion: Conversion) -> np.ndarray:
    """Crop/pad and resize [H, W, C] to [R, R, C]; refuse to upscale (an image smaller than R is a bad file)."""
    image = _fitted(Image.fromarray(pixels.squeeze(-1) if pixels.shape[-1] == 1 else pixels), conversion)
    return np.asarray(image).reshape(image.height, image.width, pixels.shape[-1])


def _fitted(image: Image.Image, conversion: Conversion) -> Image.Image:
    width, height = image.size
    size = conversion.size
    if conversion.transform == "none":
        if size is None:
            if not image_size_ok(width, height):
                raise BadImage(
                    f"size {width}x{height}: a side is not {RESOLUTIONS}, as `ganforge train` takes them (`ganforge "
                    "dataset build --resolution R` or `WxH` resizes)"
                )
            return image
        if (width, height) != size:
            raise BadImage(
                f"size {width}x{height}, not {size[0]}x{size[1]}; `ganforge dataset build --transform "
                "center-crop` or `pad` resizes"
            )
        return image
    return _CROPPERS[conversion.transform](image, size, RESIZE_FILTERS[conversion.resize_filter])


def _center_crop(image: Image.Image, size: tuple[int, int], resample) -> Image.Image:
    """The largest centred box of the target's aspect ratio, scaled to `size` (width, height)."""
    width, height = size
    scale = min(image.width / width, image.height / height)
    if scale < 1:
        raise BadImage(f"too small: {image.width}x{image.height}, less than --resolution {width}x{height} in a side")
    box_width, box_height = round(width * scale), round(height * scale)
    left, top = (image.width - box_width) // 2, (image.height - box_height) // 2
    return image.crop((left, top, left + box_width, top + box_height)).resize(size, resample)


def _center_crop_wide(image: Image.Image, size: tuple[int, int], resample) -> Image.Image:
    """A centred 2:1 band scaled to R x R/2 and padded to R x R (the StyleGAN2 paper's LSUN Car layout; square R x R
    only: a non-square --resolution keeps the band's aspect without padding through center-crop)."""
    size = size[0]
    if image.width < size or image.height < size // 2:
        raise BadImage(f"too small: {image.width}x{image.height} < {size}x{size // 2} (--transform center-crop-wide)")
    width = min(image.width, 2 * image.height)
    height = width // 2
    left, top = (image.width - width) // 2, (image.height - height) // 2
    band = image.crop((left, top, left + width, top + height)).resize((size, size // 2), resample)
    canvas = Image.new(image.mode, (size, size), PAD_FILL)
    canvas.paste(band, (0, (size - size // 2) // 2))
    return canvas


def _pad(image: Image.Image, size: tuple[int, int], resample) -> Image.Image:
    """Scale the image to fit `size` (width, height), keeping its aspect ratio, and centre it on a canvas of `size`."""
    if size[0] * image.height <= size[1] * image.width:  # the width fills the canvas
        longer, target = image.width, size[0]
    else:
        longer, target = image.height, size[1]
    if longer < target:
        raise BadImage(
            f"too small: {image.width}x{image.height}, it would be upscaled to fit --resolution {size[0]}x{size[1]}"
        )
    width = max(1, round(image.width * target / longer))
    height = max(1, round(image.height * target / longer))
    canvas = Image.new(image.mode, size, PAD_FILL)
    canvas.paste(image.resize((width, height), resample), ((size[0] - width) // 2, (size[1] - height) // 2))
    return canvas


_CROPPERS = {"center-crop": _center_crop, "center-crop-wide": _center_crop_wide, "pad": _pad}


def load_pixels(data: bytes, conversion: Conversion) -> np.ndarray:
    """File bytes -> validated uint8 array [C, H, W], the layout of every ganforge archive and of the training batch."""
    return image_pixels(decode(data, conversion.max_side), conversion)


def image_pixels(image: Image.Image, conversion: Conversion) -> np.ndarray:
    """A decoded image -> validated uint8 array [C, H, W]."""
    image = _fitted(_converted(image, conversion.channels), conversion)
    pixels = np.asarray(image).reshape(image.height, image.width, conversion.channels)
    return np.array(pixels.transpose(2, 0, 1), order="C")


def digest(pixels: np.ndarray) -> bytes:
    """SHA-256 of one [C, H, W] uint8 image; duplicates are equal digests, content hashes are built from them."""
    return hashlib.sha256(np.ascontiguousarray(pixels).tobytes()).digest()


def encode_png(pixels: np.ndarray) -> bytes:
    """[C, H, W] uint8 -> PNG bytes, zlib level 0 as NVlabs' dataset_tool writes them: decoding skips inflate work."""
    image = Image.fromarray(pixels[0] if pixels.shape[0] == 1 else pixels.transpose(1, 2, 0))
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", compress_level=0, optimize=False)
    return buffer.getvalue()
