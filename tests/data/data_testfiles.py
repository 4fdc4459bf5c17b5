"""Tiny generated image files, good and bad, for the data tests."""

import io
import json
import zipfile
from pathlib import Path

import numpy as np
from PIL import Image

from ganforge.data import fastformat, images


def pixels(seed: int, size: int = 16, channels: int = 3) -> np.ndarray:
    """Random uint8 [H, W, C] (squeezed to [H, W] for one channel)."""
    array = np.random.default_rng(seed).integers(0, 256, (size, size, channels), dtype=np.uint8)
    return array[:, :, 0] if channels == 1 else array


def encode(image: Image.Image, fmt: str = "PNG", **kwargs) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **kwargs)
    return buffer.getvalue()


def png(seed: int, size: int = 16, channels: int = 3) -> bytes:
    return encode(Image.fromarray(pixels(seed, size, channels)))


def bad_files() -> dict[str, bytes]:
    """One file per bad-input class, named for it."""
    good_png, good_jpeg = png(100), encode(Image.fromarray(pixels(101)), "JPEG")
    return {
        "truncated.png": good_png[: len(good_png) // 2],
        "truncated.jpg": good_jpeg[: len(good_jpeg) // 2],
        "tiny.png": png(102, size=1),
        "empty.png": b"",
        "text.png": b"this is not an image, just text\n",
        "dup.png": png(0),  # same pixels as the good file made from seed 0
    }


def convertible_files() -> dict[str, bytes]:
    """Files in awkward modes that must convert to good 16x16 RGB images."""
    rgba = np.dstack([pixels(200), np.full((16, 16), 128, np.uint8)])
    sixteen = (np.random.default_rng(201).integers(0, 65536, (16, 16))).astype(np.uint16)
    exif = Image.Exif()
    exif[0x0112] = 6  # Orientation: rotate 90 degrees clockwise to display
    return {
        "cmyk.jpg": encode(Image.fromarray(pixels(202)).convert("CMYK"), "JPEG"),
        "rgba.png": encode(Image.fromarray(rgba, mode="RGBA")),
        "sixteen.png": encode(Image.fromarray(sixteen)),
        "palette.png": encode(Image.fromarray(pixels(203)).convert("P")),
        "rotated.jpg": encode(Image.fromarray(pixels(204, size=16)[:8]), "JPEG", exif=exif),
    }


def write_folder(root: Path, files: dict[str, bytes]) -> Path:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


def nvlabs_name(index: int) -> str:
    digits = f"{index:08d}"
    return f"{digits[:5]}/img{digits}.png"


def write_nvlabs_zip(path: Path, arrays: list[np.ndarray], labels: list[int] | None) -> Path:
    """A zip laid out as NVlabs' dataset_tool writes it, built here by hand."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        for index, array in enumerate(arrays):
            archive.writestr(nvlabs_name(index), encode(Image.fromarray(array)))
        entries = None if labels is None else [[nvlabs_name(i), label] for i, label in enumerate(labels)]
        archive.writestr("dataset.json", json.dumps({"labels": entries}))
    return path


def write_fast(path: Path, arrays: list[np.ndarray], labels: list[int] | None, label_names: list[str]) -> Path:
    """A fast-format file of [H, W, C] arrays with class labels (None and [] without), its content hash correct."""
    channels, resolution = arrays[0].shape[2], arrays[0].shape[0]
    writer, hasher = fastformat.FastWriter(path, channels, resolution, resolution), fastformat.ContentHasher()
    for array in arrays:
        pixels = np.ascontiguousarray(array.transpose(2, 0, 1))
        writer.add(pixels)
        hasher.add(images.digest(pixels))
    classes = None if labels is None else np.array(labels, dtype=np.int64)
    content_hash = hasher.finish(channels, (resolution, resolution), label_names, classes)
    writer.finish(classes, {"label_names": label_names, "content_hash": content_hash, "build": {}})
    return path


def read_nvlabs_zip(path: Path) -> tuple[np.ndarray, np.ndarray | None]:
    """A reader that follows NVlabs' layout only: sorted image members, PIL decode, HWC -> CHW, dataset.json."""
    with zipfile.ZipFile(path) as archive:
        names = sorted(n for n in archive.namelist() if n.endswith(".png"))
        arrays = []
        for name in names:
            array = np.array(Image.open(io.BytesIO(archive.read(name))))
            arrays.append((array[:, :, None] if array.ndim == 2 else array).transpose(2, 0, 1))
        entries = json.loads(archive.read("dataset.json"))["labels"]
    labels = None if entries is None else np.array([dict(entries)[name] for name in names])
    return np.stack(arrays), labels
