"""The shard format: a folder (or URL prefix) of tar shards in WebDataset's layout, and an `index.json` describing them.

    index.json            {"format": "ganforge-shards", "format_version": 1, "count", "channels", "resolution"
                           (the side, or of non-square images the shorter one and then "width", "height"),
                           "encoding": "png" | "u8", "label_names", "content_hash", "order_seed", "build",
                           "shards": [{"name", "count", "bytes", "sha256", "classes"?}, ...],
                           with label vectors also "label_kind": "vector", "labels_sha256"}
    shard-000000.tar      00000000.png (or .u8: raw [C, H, W] uint8), 00000000.json (with labels: {"class": name},
                          or {"label": [numbers]}),
    shard-000001.tar      00000001.png, ... : one sample per key, keys numbered across shards
    labels.f32            with label vectors: every image's vector in index order, float32 [count, D] little-endian

A dataset of classes counts the images of each class in its shard entries (`classes`, in label_names' order), and one
of label vectors keeps them all in labels.f32, so readers know the label distribution, and can draw labels as the
reals have them, without reading a shard. `dataset build` writes the images in a fixed pseudo-random order
(`order_seed`), so that each shard is a random sample of the dataset: a stream that reads a few shards at a time then
sees every class, as WebDataset's authors advise for shuffling at scale. Readers trust nothing in the index beyond the
limits checked in `read_index`.
"""

import collections
import json
import re

import numpy as np

from ganforge.data import fastformat, images, labels
from ganforge.data.files import brief, parse_json
from ganforge.data.tarstream import TarWriter
from ganforge.digest import file_sha256
from ganforge.errors import UserError
from ganforge.limits import IMAGE_SIZES, RESOLUTIONS, image_size_ok, resolution_ok

INDEX = "index.json"
FORMAT = "ganforge-shards"
ENCODINGS = ("png", "u8")
DEFAULT_SHARD_BYTES = 10**9
MAX_SHARDS = 10**6
MAX_IMAGES = 10**10
_MAX_SHARD_BYTES = 2**40
_INDEX_BASE_BYTES, _INDEX_BYTES_PER_SHARD = 2**20, 256
SAMPLE_JSON_BYTES = 4096  # a sample's label object; a class name is at most this long
_JSON_BYTES_PER_NUMBER = 32  # a float32 in JSON, its sign, exponent and separator included
LABELS_FILE = "labels.f32"
# Label vectors are read whole when a dataset opens: 256 MiB holds 1.3M images' vectors of 50 numbers.
MAX_LABEL_FILE_BYTES = 2**28
_SHARD_NAME = re.compile(r"shard-\d{6,9}\.tar")
_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12, "kib": 2**10, "mib": 2**20, "gib": 2**30}
ORDER_SEED = 0


def shard_name(index: int) -> str:
    return f"shard-{index:06d}.tar"


def sample_key(index: int) -> str:
    return f"{index:08d}"


def parse_size(text: str) -> int:
    """`1GB`, `500MB`, `256MiB`, `4096` -> bytes; ValueError naming the accepted forms."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", str(text))
    unit = match and match.group(2).lower()
    if not match or unit not in _UNITS:
        raise ValueError(f"{text!r} is not a size such as 1GB, 500MB or 256MiB")
    size = round(float(match.group(1)) * _UNITS[unit])
    if not 1024 <= size <= _MAX_SHARD_BYTES:
        raise ValueError(f"{text!r} is not between 1KB and 1TiB")
    return size


def sample_bytes_cap(encoding: str, channels: int, height: int, width: int) -> int:
    """The most bytes one image member of a shard may hold: a raw array exactly, a PNG what a file of the size may."""
    return channels * height * width if encoding == "u8" else images.max_file_bytes(max(height, width))


def sample_json_cap(label_names: list[str]) -> int:
    """The most bytes a sample's .json may take: a class name, or a vector of one number per label name."""
    return SAMPLE_JSON_BYTES + _JSON_BYTES_PER_NUMBER * len(label_names)


class ShardWriter:
    """Writes samples into numbered shards of about `shard_bytes` each (a shard closes before the sample that would
    overflow it; a sample larger than that gets a shard of its own)."""

    def __init__(self, folder, encoding: str, shard_bytes: int):
        self.folder, self.encoding, self.shard_bytes = folder, encoding, shard_bytes
        self.count, self.shards, self._classes = 0, [], []
        self._tar, self._open_bytes, self._open_count = None, 0, 0
        folder.mkdir()

    def add(self, payload, label) -> None:
        """One sample: its image and its label (a class name, a float32 label vector, or None)."""
        data = payload.tobytes() if self.encoding == "u8" else payload
        meta = None
        if isinstance(label, str):
            meta = json.dumps({"class": label}).encode()
        elif label is not None:
            meta = json.dumps({"label": label.tolist()}).encode()
        # Each member takes a 512-byte header and is padded to 512 bytes.
        size = 1024 + len(data) + (0 if meta is None else 1024 + len(meta))
        if self._tar is not None and self._open_bytes + size > self.shard_bytes:
            self._close_shard()
        if self._tar is None:
            self._tar = TarWriter(self.folder / shard_name(len(self.shards)))
            self._classes.append(collections.Counter())
        if isinstance(label, str):
            self._classes[-1][label] += 1
        key = sample_key(self.count)
        self._tar.add(f"{key}.{self.encoding}", data)
        if meta is not None:
            self._tar.add(f"{key}.json", meta)
        self.count += 1
        self._open_bytes += size
        self._open_count += 1

    def _close_shard(self) -> None:
        self._tar.close()
        path = self.folder / shard_name(len(self.shards))
        entry = {"name": path.name, "count": self._open_count, "bytes": path.stat().st_size}
        self.shards.append(entry | {"sha256": file_sha256(path)})
        self._tar, self._open_bytes, self._open_count = None, 0, 0

    def finish(self, image_labels, header: dict) -> None:
        """Close the last shard and write the index (last, so a folder with an index is complete). `image_labels`,
        which the other formats' writers store here, is already in the shards (each sample's label beside it); the
        index counts classes, and label vectors are written again, all together, to labels.f32."""
        self._close_shard()
        if image_labels is not None and image_labels.ndim == 2:
            if image_labels.nbytes > MAX_LABEL_FILE_BYTES:  # readers load them whole
                raise UserError(
                    f"{image_labels.shape[0]} label vectors of {image_labels.shape[1]} numbers take more than the "
                    f"{MAX_LABEL_FILE_BYTES >> 20} MiB a shard dataset's labels.f32 may; label the images with fewer "
                    "columns"
                )
            path = self.folder / LABELS_FILE
            path.write_bytes(np.asarray(image_labels, dtype="<f4").tobytes())
            header = {**header, "label_kind": "vector", "labels_sha256": file_sha256(path)}
        elif header["label_names"]:
            for shard, classes in zip(self.shards, self._classes, strict=True):
                shard["classes"] = [classes[name] for name in header["label_names"]]
        index = {"format": FORMAT, "format_version": 1, **header, "encoding": self.encoding}
        index |= {"order_seed": ORDER_SEED, "shards": self.shards}
        (self.folder / INDEX).write_text(json.dumps(index, indent=1))

    def close(self) -> None:
        if self._tar is not None:
            self._tar.close()
            self._tar = None


def build_order(count: int) -> np.ndarray:
    """The order in which `dataset build --format shards` writes the `count` source files: a fixed shuffle."""
    return np.random.default_rng(ORDER_SEED).permutation(count)


def index_cap() -> int:
    return _INDEX_BASE_BYTES + _INDEX_BYTES_PER_SHARD * MAX_SHARDS


def _int_in(value, low: int, high: int) -> bool:
    return type(value) is int and low <= value <= high


def read_index(data: bytes, where: str) -> dict:
    """The parsed, checked index.json of a shard dataset; UserError listing every problem."""
    index = parse_json(data, where)
    if not isinstance(index, dict) or index.get("format") != FORMAT:
        raise UserError(f"{where}: not a ganforge shard index; make one with `ganforge dataset build --format shards`")
    checks = [
        (index.get("format_version") == 1, "format_version is not 1 (made by a newer ganforge?)"),
        (_int_in(index.get("count"), 1, MAX_IMAGES), f"count is not a number of images from 1 to {MAX_IMAGES}"),
        (index.get("channels") in (1, 3), "channels is not 1 or 3"),
        (resolution_ok(index.get("resolution")), f"resolution is not {RESOLUTIONS}"),
        (index.get("encoding") in ENCODINGS, f"encoding is not one of {', '.join(ENCODINGS)}"),
        (labels.is_content_hash(index.get("content_hash")), "content_hash is not 64 hex digits"),
    ]
    problems = [problem for ok, problem in checks if not ok]
    size_problem = None if problems else fastformat.size_problem(index)
    if size_problem or (problems == [] and not image_size_ok(*_size(index))):
        problems.append(size_problem or f"width and height are not {IMAGE_SIZES}")
    names_problem = labels.names_problem(index.get("label_names"))
    problems += [names_problem] if names_problem else []
    if not problems:
        problems += _vector_problems(index)
    if not problems:
        classes = 0 if index.get("label_kind") == "vector" else len(index["label_names"])
        problems += _shard_problems(index.get("shards"), index["count"], classes)
    if problems:
        raise UserError(*(f"{where}: {problem}" for problem in problems), f"{where}: rebuild the shards")
    return fastformat.with_size(index)


def _size(index: dict) -> tuple[int, int]:
    return index.get("width", index["resolution"]), index.get("height", index["resolution"])


def label_file_bytes(index: dict) -> int:
    return 4 * index["count"] * len(index["label_names"])


def _vector_problems(index: dict) -> list[str]:
    """What is wrong with the label vectors' fields of an index (its other fields already checked)."""
    kind = index.get("label_kind", "class")
    if kind == "class":
        return [] if "labels_sha256" not in index else ["labels_sha256 without label_kind vector"]
    if kind != "vector" or not index["label_names"]:
        return ['label_kind is not "vector" with label_names naming its entries']
    if not labels.is_content_hash(index.get("labels_sha256")):
        return ["labels_sha256 is not 64 hex digits"]
    if label_file_bytes(index) > MAX_LABEL_FILE_BYTES:
        return [f"its label vectors take more than {MAX_LABEL_FILE_BYTES >> 20} MiB; use fewer label entries"]
    return []


def _shard_problems(shards, count: int, classes: int) -> list[str]:
    if not isinstance(shards, list) or not 1 <= len(shards) <= MAX_SHARDS:
        return [f"shards is not a list of 1 to {MAX_SHARDS} shards"]
    for number, shard in enumerate(shards):
        ok = (
            isinstance(shard, dict)
            and set(shard) == {"name", "count", "bytes", "sha256"} | ({"classes"} if classes else set())
            and isinstance(shard["name"], str)
            and _SHARD_NAME.fullmatch(shard["name"]) is not None
            and _int_in(shard["count"], 1, MAX_IMAGES)
            and _int_in(shard["bytes"], 1, _MAX_SHARD_BYTES)
            and labels.is_content_hash(shard["sha256"])
            and (not classes or _counts_ok(shard["classes"], classes, shard["count"]))
        )
        if not ok:
            fields = "name: shard-NNNNNN.tar, count, bytes, sha256" + (
                ", classes: a count per label name" if classes else ""
            )
            return [f"shard entry {number} is not {{{fields}}}: {brief(shard, 80)}"]
    if len({shard["name"] for shard in shards}) != len(shards):
        return ["two shard entries share a name"]
    total = sum(shard["count"] for shard in shards)
    return [] if total == count else [f"the shards hold {total} images, not the {count} of count"]


def _counts_ok(counts, classes: int, total: int) -> bool:
    """Is `counts` a list of `classes` image counts that add up to the shard's `total`?"""
    return (
        isinstance(counts, list)
        and len(counts) == classes
        and all(_int_in(c, 0, MAX_IMAGES) for c in counts)
        and sum(counts) == total
    )
