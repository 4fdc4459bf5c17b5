"""The fast dataset format: one memory-mappable file of pre-decoded uint8 images (suffix `.gfd` by convention).

Layout (all integers little-endian):

    offset 0     8 bytes   magic b"GFFAST01"
    offset 8     uint64    byte offset of the JSON header
    offset 16    uint64    byte length of the JSON header
    offset 4096  images    uint8 [count, channels, height, width], C order, no gaps
    then         labels    int64 [count] class indices, or with label_kind "vector" float32 [count, len(label_names)]
                           label vectors (absent when label_names is empty)
    then         header    UTF-8 JSON: format, format_version, count, channels, resolution (the side; of
                           non-square images the shorter, then width and height follow), label_names,
                           label_kind (only "vector"; absent: class indices), content_hash, build (the options
                           that made the file)

The JSON header sits after the data because the image count is only known once every source file has been
validated; the fixed prefix points at it. Images start page-aligned so np.memmap slices are aligned reads.
`content_hash` is the format-independent hash of `ContentHasher` below, the same for a zip built from the same
images, so metric caches keyed by it survive a change of format.
"""

import hashlib
import json
import struct
from pathlib import Path

import numpy as np

from ganforge.data import labels
from ganforge.limits import MAX_RESOLUTION

MAGIC = b"GFFAST01"
DATA_OFFSET = 4096
_PREFIX = struct.Struct("<8sQQ")
# The header holds the label names (at most MAX_LABEL_DIM) and the build options: far less than this.
MAX_HEADER_BYTES = 16 * 2**20


class ContentHasher:
    """SHA-256 over every image's own SHA-256 in order, then the shape, the label names and the labels: int64 class
    indices, or a marker and float32 label vectors (the marker keeps the two kinds from ever sharing a hash).

    Hashing per-image digests (rather than all pixels in one stream) lets pool workers hash their own images, and
    lets the build and `verify` agree without holding pixels in one place. Identical for zip and fast archives.
    """

    def __init__(self):
        self._hasher = hashlib.sha256()

    def add(self, image_digest: bytes) -> None:
        self._hasher.update(image_digest)

    def finish(self, channels: int, size: tuple[int, int], label_names: list[str], labels: np.ndarray | None) -> str:
        """The hash, given the images' (height, width); a square side is hashed as the one number it always was."""
        height, width = size
        shape = height if height == width else [height, width]
        self._hasher.update(json.dumps([channels, shape, list(label_names)]).encode())
        if labels is not None and labels.ndim == 2:
            self._hasher.update(b"float32 label vectors")
            self._hasher.update(np.asarray(labels, dtype="<f4").tobytes())
        elif labels is not None:
            self._hasher.update(np.asarray(labels, dtype="<i8").tobytes())
        return self._hasher.hexdigest()


def is_fast_file(path: Path) -> bool:
    if not path.is_file():
        return False
    with open(path, "rb") as file:
        return file.read(len(MAGIC)) == MAGIC


def read_header(path: Path) -> dict:
    """The validated JSON header, with the byte offsets of the image and label arrays added; ValueError saying what
    is wrong otherwise. Every reader and command takes the header from here, so they accept the same files."""
    size = path.stat().st_size
    with open(path, "rb") as file:
        prefix = file.read(_PREFIX.size)
        if len(prefix) < _PREFIX.size:
            raise ValueError(f"{size} bytes, shorter than the {_PREFIX.size}-byte prefix")
        magic, offset, length = _PREFIX.unpack(prefix)
        if magic != MAGIC:
            raise ValueError("not a ganforge fast dataset (bad magic bytes)")
        # The header is written last, so it ends the file; its length is checked before it is read.
        if not (offset >= DATA_OFFSET and offset + length == size and length <= MAX_HEADER_BYTES):
            raise ValueError(f"the prefix places the header at bytes {offset}+{length} of a {size}-byte file")
        file.seek(offset)
        text = file.read(length)
    try:
        header = json.loads(text)
    except RecursionError:
        raise ValueError("the header is JSON nested too deeply") from None
    except ValueError:  # JSONDecodeError, UnicodeDecodeError
        raise ValueError("the header is not JSON") from None
    problem = header_problem(header)
    if problem:
        raise ValueError(problem)
    header = with_size(header)
    image_bytes = header["count"] * header["channels"] * header["height"] * header["width"]
    header["images_offset"] = DATA_OFFSET
    header["labels_offset"] = DATA_OFFSET + image_bytes
    labels_end = header["labels_offset"] + label_bytes(header)
    if labels_end != offset:
        raise ValueError(f"header says {header['count']} images but the data section ends at byte {offset}")
    return header


def header_problem(header) -> str | None:
    """What is wrong with a parsed header's fields (None: each has its type and range)."""
    if not isinstance(header, dict):
        return "the header is not a JSON object"
    if header.get("format") != "ganforge-fast" or header.get("format_version") != 1:
        return "the header is not format ganforge-fast version 1"
    checks = (
        ("count", lambda n: n >= 1, "a whole number >= 1"),
        ("channels", lambda c: c in (1, 3), "1 or 3"),
        ("resolution", lambda r: 1 <= r <= MAX_RESOLUTION, f"a whole number from 1 to {MAX_RESOLUTION}"),
    )
    for key, ok, expected in checks:
        value = header.get(key)
        if type(value) is not int or not ok(value):  # bool is an int subclass, 1.5 and "x" are not ints
            return f"header field {key} is not {expected}"
    names = header.get("label_names")
    problem = labels.names_problem(names)
    if problem:
        return problem
    if header.get("label_kind", "class") not in ("class", "vector"):
        return 'header field label_kind is not "vector"'
    if header.get("label_kind") == "vector" and not names:
        return "header says label vectors but names no entries"
    if not labels.is_content_hash(header.get("content_hash")):
        return "header field content_hash is not 64 hex digits"
    return size_problem(header)


def size_fields(height: int, width: int) -> dict:
    """The header (or index) fields of the images' size: `resolution` alone for square images, as always; else the
    shorter side, the networks' resolution, then `width` and `height`."""
    if height == width:
        return {"resolution": height}
    return {"resolution": min(height, width), "width": width, "height": height}


def size_problem(header: dict) -> str | None:
    """What is wrong with the width and height of a header whose `resolution` is checked (None: fine, or both absent
    for square images)."""
    if "width" not in header and "height" not in header:
        return None
    width, height = header.get("width"), header.get("height")
    ok = all(type(value) is int and 1 <= value <= MAX_RESOLUTION for value in (width, height))
    if not ok or width == height or min(width, height) != header["resolution"]:
        return f"width and height are not two different sides up to {MAX_RESOLUTION}, the shorter one resolution"
    return None


def with_size(header: dict) -> dict:
    """A checked header with `width` and `height` filled in (square images store `resolution` only)."""
    return {"width": header["resolution"], "height": header["resolution"], **header}


def map_images(path: Path, header: dict) -> np.memmap:
    shape = (header["count"], header["channels"], header["height"], header["width"])
    return np.memmap(path, dtype=np.uint8, mode="r", offset=header["images_offset"], shape=shape)


def label_bytes(header: dict) -> int:
    """The size of the label section of a checked header."""
    if not header["label_names"]:
        return 0
    if header.get("label_kind") == "vector":
        return 4 * header["count"] * len(header["label_names"])
    return 8 * header["count"]


def read_labels(path: Path, header: dict) -> np.ndarray | None:
    """The class indices [count] or label vectors [count, D] of a file whose header read_header() returned;
    ValueError if a class is out of range or a vector entry is not finite."""
    if not header["label_names"]:
        return None
    if header.get("label_kind") == "vector":
        shape = (header["count"], len(header["label_names"]))
        vectors = np.array(np.memmap(path, dtype="<f4", mode="r", offset=header["labels_offset"], shape=shape))
        if not np.isfinite(vectors).all():
            raise ValueError("a label vector holds a number that is not finite")
        return vectors.astype(np.float32)
    mapped = np.memmap(path, dtype="<i8", mode="r", offset=header["labels_offset"], shape=(header["count"],))
    classes = np.array(mapped, dtype=np.int64)
    problem = labels.class_problem(classes, len(header["label_names"]))
    if problem:
        raise ValueError(problem)
    return classes


class FastWriter:
    """Streams images into a fast file: `add()` one [C, R, R] image at a time, then `finish()` once."""

    def __init__(self, path: Path, channels: int, height: int, width: int):
        self.path = path
        self.channels, self.height, self.width = channels, height, width
        self.count = 0
        self._file = open(path, "xb")  # noqa: SIM115 -- closed by finish()/close(), it outlives this call
        self._file.write(b"\0" * DATA_OFFSET)

    def add(self, pixels: np.ndarray) -> None:
        assert pixels.shape == (self.channels, self.height, self.width) and pixels.dtype == np.uint8
        self._file.write(np.ascontiguousarray(pixels).tobytes())
        self.count += 1

    def finish(self, labels: np.ndarray | None, header: dict) -> None:
        """Append the labels and the JSON header (`label_names`, `content_hash`, `build`), then close the file."""
        if labels is not None and labels.ndim == 2:
            header = {**header, "label_kind": "vector"}
            self._file.write(np.asarray(labels, dtype="<f4").tobytes())
        elif labels is not None:
            self._file.write(np.asarray(labels, dtype="<i8").tobytes())
        offset = self._file.tell()
        shape = {"count": self.count, "channels": self.channels, **size_fields(self.height, self.width)}
        text = json.dumps({"format": "ganforge-fast", "format_version": 1, **shape, **header}, indent=1).encode()
        self._file.write(text)
        self._file.seek(0)
        self._file.write(_PREFIX.pack(MAGIC, offset, len(text)))
        self.close()

    def close(self) -> None:
        self._file.close()
