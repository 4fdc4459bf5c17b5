"""The images to project, read as the dataset tool reads a photo (bounded, fully decoded, EXIF orientation, alpha on
white, the network's channels), then centre-cropped to a square and resized to the network's resolution with
Lanczos' filter, as the official projector does, smaller images included (a projection target may be any size). For a
non-square network (aspect (rows, cols)) the crop is the largest centred box of its aspect, resized to its images'
width and height."""

import os
import stat
from pathlib import Path

import numpy as np
import PIL.Image
import torch

from ganforge.data.images import BadImage, decode, to_array
from ganforge.errors import UserError

# A photo of Pillow's largest size (about 89 megapixels) stored as 16-bit RGBA without compression, with room for
# metadata: a larger file is no image this reads, and is refused before a byte of it is read.
MAX_TARGET_BYTES = 1 << 30


def load_targets(paths: tuple[Path, ...], resolution: int, channels: int, aspect=(1, 1)) -> torch.Tensor:
    """uint8 [N, channels, resolution x rows, resolution x cols] of every target, aspect = (rows, cols); one UserError
    naming each bad file."""
    images, problems = [], []
    for path in paths:
        try:
            images.append(target_pixels(_read(Path(path)), resolution, channels, aspect))
        except BadImage as problem:
            problems.append(f"--target {path}: {problem}; pass an image file (PNG, JPEG, WebP, ...)")
    if problems:
        raise UserError(*problems)
    return torch.from_numpy(np.stack(images))


def target_pixels(data: bytes, resolution: int, channels: int, aspect=(1, 1)) -> np.ndarray:
    """File bytes -> uint8 [channels, height, width] = [channels, resolution x rows, resolution x cols] for aspect =
    (rows, cols): the largest centred box of that aspect in the image (a square unless non-square), resized."""
    image = PIL.Image.fromarray(_squeezed(to_array(decode(data), channels)))
    rows, cols = aspect
    if image.width * rows <= image.height * cols:  # narrower than the aspect: the box is as wide as the image
        box_w, box_h = image.width, max(1, image.width * rows // cols)
    else:
        box_w, box_h = max(1, image.height * cols // rows), image.height
    left, top = (image.width - box_w) // 2, (image.height - box_h) // 2
    height, width = resolution * rows, resolution * cols
    box = image.crop((left, top, left + box_w, top + box_h)).resize((width, height), PIL.Image.LANCZOS)
    pixels = np.asarray(box).reshape(height, width, channels)  # a view of PIL's read-only buffer
    return pixels.transpose(2, 0, 1).copy()  # writable (torch.from_numpy warns on a read-only one) and contiguous


def _squeezed(array: np.ndarray) -> np.ndarray:
    return array[:, :, 0] if array.shape[2] == 1 else array


def _read(path: Path) -> bytes:
    """A regular file's bytes, its size checked on the open descriptor first (a FIFO never blocks the read)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as error:
        raise BadImage(f"cannot be read ({error.strerror})") from None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise BadImage("not a regular file")
        if info.st_size > MAX_TARGET_BYTES:
            raise BadImage(f"{info.st_size:,} bytes, more than an image file this reads ({MAX_TARGET_BYTES:,})")
        return file.read(MAX_TARGET_BYTES + 1)
