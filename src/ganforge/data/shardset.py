"""A shard dataset opened for reading: its index, and its shards read sample by sample, start to end.

Shards are read as streams, never by random access: training streams them in a seeded order (`ganforge.data.stream`);
what needs a fixed set of real images (the `reals.png` grid, the metrics' reals) takes the first images in index
order, a random sample since `dataset build` wrote the images shuffled.
"""

import contextlib
import hashlib

import numpy as np

from ganforge.data import images, remote, remote_limits, shards, tarstream
from ganforge.data.files import brief, parse_json
from ganforge.errors import UserError
from ganforge.limits import aspect_of
from ganforge.urls import path_name, public_url


def shard_location(path: str) -> str | None:
    """The location of the shard dataset that `path` (a --data value) names, or None when it names another kind of
    dataset: a URL, or a local folder holding an index.json (or that index.json itself)."""
    from pathlib import Path

    if remote.is_url(path):  # a signed URL's query stays on the end, as remote.join keeps it
        folder, mark, query = path.partition("?")
        return folder.removesuffix("/" + shards.INDEX) + mark + query
    local = Path(path)
    if local.name == shards.INDEX and local.is_file():
        return str(local.parent)
    if local.is_dir() and (local / shards.INDEX).is_file():
        return path
    return None


class ShardDataset:
    """Images as uint8 [C, H, W] and labels as float32 vectors [label_dim] (one-hot classes, or the dataset's label
    vectors), from tar shards.

    `mirror` and `labels` mean what they mean for ImageDataset: x-flipped copies (applied by the stream, which flips
    half the images of each pass), and whether labels are given (else vectors of length 0).
    """

    format = "shards"
    # read as a stream, never by index: training deals the shards out (ganforge.data.stream); what needs fixed real
    # images takes the first ones (`first`), a random sample already
    streamed = True

    def __init__(
        self,
        location: str,
        mirror: bool = False,
        labels: bool = True,
        what: str | None = "--data",
        limits: remote_limits.Limits | None = None,
        block: int = remote.READ_BLOCK_BYTES,
    ):
        """`limits`: time-outs and retries of remote reads (None: the defaults, or GANFORGE_REMOTE_LIMITS'); `block`:
        bytes per request."""
        self.path, self.mirror, self.what, self.block = location, mirror, what, block
        self.public = public_url(location)  # what messages show: the URL without its credentials
        with self._named():
            self.limits = remote_limits.from_environment() if limits is None else limits
            self.fs, self.root = remote.filesystem(location, what, self.limits)
            where = remote.join(self.public, shards.INDEX)
            missing = f"{where}: missing; a shard dataset is a folder or URL prefix with index.json and its shards"
            data = remote.read_whole(
                self.fs, remote.join(self.root, shards.INDEX), shards.index_cap(), where, self.limits, missing
            )
            index = shards.read_index(data, where)
        self.index, self.shards, self.encoding = index, index["shards"], index["encoding"]
        self.name = path_name(location) or "shards"  # of a URL, never its host, credentials or query
        self.height, self.width, self.channels = index["height"], index["width"], index["channels"]
        self.resolution, self.aspect = aspect_of(self.width, self.height)
        self.label_names = list(index["label_names"])
        self.label_dim = len(self.label_names) if labels else 0
        self.num_raw, self.content_hash = index["count"], index["content_hash"]
        self._class_of = {name: number for number, name in enumerate(self.label_names)}
        self.vectors = index.get("label_kind") == "vector"
        self.class_counts, self.raw_labels = None, None
        if self.vectors:  # loaded without `labels` too: `dataset info` and the run folder show them
            with self._named():
                self.raw_labels = self._label_vectors()
        elif self.label_names and not self.vectors:
            self.class_counts = np.sum([shard["classes"] for shard in self.shards], axis=0, dtype=np.int64)
        self._image_cap = shards.sample_bytes_cap(self.encoding, self.channels, self.height, self.width)
        self._conversion = images.reader_conversion(self.channels, (self.width, self.height))

    def __len__(self) -> int:
        return self.num_raw * (2 if self.mirror else 1)

    @property
    def stored_hash(self) -> str:
        """The index's pixel-based content hash, which `dataset verify` recomputes."""
        return self.content_hash

    def _label_vectors(self) -> np.ndarray:
        """labels.f32, checked against the index: its size, SHA-256, and finite numbers."""
        size, where = shards.label_file_bytes(self.index), remote.join(self.public, shards.LABELS_FILE)
        missing = f"{where}: missing; the index says the images have label vectors; rebuild the shards"
        path = remote.join(self.root, shards.LABELS_FILE)
        data = remote.read_whole(self.fs, path, size, where, self.limits, missing)
        if len(data) != size or hashlib.sha256(data).hexdigest() != self.index["labels_sha256"]:
            raise UserError(
                f"{where}: not the label vectors index.json describes (size or SHA-256); rebuild the shards"
            )
        vectors = np.frombuffer(data, dtype="<f4").reshape(self.num_raw, len(self.label_names))
        if not np.isfinite(vectors).all():
            raise UserError(f"{where}: a label vector holds a number that is not finite; rebuild the shards")
        return vectors.astype(np.float32)

    def label(self, raw_index: int) -> np.ndarray:
        """The label of the `raw_index`-th image: of label vectors, the index order's; of classes, counting class by
        class (the first class_counts[0] are class 0, ...). Either way a uniform index gives the reals' label mix,
        which is what callers that draw labels (metrics) need."""
        if self.label_dim and self.vectors:
            return self.raw_labels[raw_index].copy()
        vector = np.zeros(self.label_dim, dtype=np.float32)
        if self.label_dim:
            vector[int(np.searchsorted(np.cumsum(self.class_counts), raw_index, side="right"))] = 1
        return vector

    def label_vector(self, label) -> np.ndarray:
        """A sample's label as the networks take it: a class index one-hot, a label vector as it is."""
        if not self.label_dim:
            return np.zeros(0, dtype=np.float32)
        if self.vectors:
            return label
        vector = np.zeros(self.label_dim, dtype=np.float32)
        vector[label] = 1
        return vector

    def where(self, number: int) -> str:
        """Shard `number`'s location as messages show it."""
        return remote.join(self.public, self.shards[number]["name"])

    def samples(self, number: int, hasher=None):
        """Yield (image bytes, label) for each sample of shard `number` in its order, the label a class index, a
        float32 label vector, or None without labels; UserError naming
        the shard when it is damaged, disagrees with the index or cannot be read. With a `hasher`, every byte of the
        shard is fed to it, the end-of-archive padding too (at most what index.json says the shard takes)."""
        with self._named():
            yield from self._samples(number, hasher)

    def _samples(self, number: int, hasher):
        where, shard = self.where(number), self.shards[number]
        expected, seen = shard["count"], 0
        cap = max(self._image_cap, shards.sample_json_cap(self.label_names))
        path = remote.join(self.root, shard["name"])
        with remote.BlockReader(self.fs, path, shard["bytes"], where, self.limits, self.block) as file:
            stream = file if hasher is None else _Hashed(file, hasher)
            try:
                for sample in _grouped(tarstream.members(stream, cap), (self.encoding, "json")):
                    seen += 1
                    if seen > expected:
                        raise tarstream.BadShard(f"holds more than the {expected} samples index.json lists")
                    yield self._checked(sample)
                if hasher is not None:  # the padding after the last member is part of the shard's bytes
                    while stream.read(1 << 20):
                        continue
            except tarstream.BadShard as error:
                raise UserError(f"{where}: {error}; rebuild the shards") from None
        if seen != expected:
            raise UserError(f"{where}: holds {seen} samples, index.json lists {expected}; rebuild it")

    def _prefix(self) -> str:
        return f"{self.what}: " if self.what else ""

    @contextlib.contextmanager
    def _named(self):
        """Every UserError raised inside names the option the dataset came from (`--data: ...`), as open_dataset's
        errors about other formats do."""
        try:
            yield
        except UserError as error:
            raise type(error)(*(self._prefix() + problem for problem in error.problems)) from None

    def _checked(self, sample: tuple[str, dict[str, bytes]]) -> tuple[bytes, int | np.ndarray | None]:
        key, parts = sample
        image = parts.get(self.encoding)
        if image is None or len(image) > self._image_cap:
            raise tarstream.BadShard(
                f"sample {key[:40]!r} has no .{self.encoding} image of at most {self._image_cap} bytes"
            )
        if not self.label_names:
            return image, None
        meta, cap = parts.get("json"), shards.sample_json_cap(self.label_names)
        if meta is None or len(meta) > cap:
            raise tarstream.BadShard(f"sample {key[:40]!r} has no .json label of at most {cap} bytes")
        try:
            label = parse_json(meta, "label")
        except UserError:
            raise tarstream.BadShard(f"sample {key[:40]!r}: its .json is not JSON") from None
        if self.vectors:
            return image, self._vector(key, label)
        name = label.get("class") if isinstance(label, dict) else None
        if not isinstance(name, str) or name not in self._class_of:
            raise tarstream.BadShard(f"sample {key[:40]!r}: {brief(label, 60)} names none of the dataset's classes")
        return image, self._class_of[name]

    def _vector(self, key: str, label) -> np.ndarray:
        numbers = label.get("label") if isinstance(label, dict) else None
        ok = isinstance(numbers, list) and len(numbers) == len(self.label_names)
        ok = ok and all(isinstance(x, int | float) and not isinstance(x, bool) for x in numbers)
        with np.errstate(over="ignore"):
            vector = np.array(numbers, dtype=np.float64).astype(np.float32) if ok else None
        if vector is None or not np.isfinite(vector).all():
            raise tarstream.BadShard(
                f"sample {key[:40]!r}: {brief(label, 60)} is not a label of {len(self.label_names)} finite numbers"
            )
        return vector

    def decode(self, image: bytes, where: str) -> np.ndarray:
        """uint8 [C, H, W] from a sample's image bytes; UserError naming `where` if they are not such an image."""
        if self.encoding == "u8":
            if len(image) != self._image_cap:
                raise UserError(f"{self._prefix()}{where}: a raw image of {len(image)} bytes, not {self._image_cap}")
            return np.frombuffer(image, dtype=np.uint8).reshape(self.channels, self.height, self.width)
        try:
            return images.load_pixels(image, self._conversion)
        except images.BadImage as error:
            raise UserError(f"{self._prefix()}{where}: {error}; rebuild the shards") from None

    def first(self, count: int):
        """Yield (pixels, label vector) of the first `count` images in index order (shard 0 first)."""
        if count <= 0:
            return
        for number in range(len(self.shards)):
            for image, label in self.samples(number):
                yield self.decode(image, self.where(number)), self.label_vector(label)
                count -= 1
                if count == 0:
                    return


class _Hashed:
    """A file whose every read also goes to `hasher`."""

    def __init__(self, file, hasher):
        self.file, self.hasher = file, hasher

    def read(self, size: int) -> bytes:
        data = self.file.read(size)
        self.hasher.update(data)
        return data


def _grouped(members, wanted: tuple[str, ...]):
    """(key, {extension: bytes}) per sample from (name, bytes) members, keeping the `wanted` extensions only (others,
    such as a caption, are passed over). WebDataset's rule: a sample is the run of consecutive members sharing a key,
    the name up to the first dot of its last path component."""
    key, parts = None, {}
    for name, data in members:
        folder, _, base = name.rpartition("/")
        stem, _, extension = base.partition(".")
        member_key = f"{folder}/{stem}" if folder else stem
        if member_key != key and key is not None:
            yield key, parts
            parts = {}
        key = member_key
        if extension in parts:
            raise tarstream.BadShard(f"sample {key[:40]!r} has two .{extension[:20]} members")
        if extension in wanted:
            parts[extension] = data
    if key is not None:
        yield key, parts
