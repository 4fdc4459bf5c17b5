"""Random-access readers for the three dataset forms, behind one `ImageDataset`: `open_dataset(path)`.

- folder: images found recursively (sorted by relative path), decoded on every access; labels from a
  `dataset.json` at its root when present. Convenient, slow; `ganforge dataset build` makes an archive from it.
- zip: ours or NVlabs' dataset_tool layout (`00000/img00000000.png` + `dataset.json` with
  `{"labels": [[name, class or label vector], ...] | null}`). The ZipFile is opened lazily in each process, never
  inherited or pickled: a forked DataLoader worker sharing the parent's file offset would read garbage.
- fast: `fastformat`, memory-mapped, no decoding.

Content hash: fast files carry it in the header; zips we built carry it in `dataset.json` (key
`ganforge.content_hash`, the same pixel-based hash as the fast format). For other zips it is SHA-256 over member
names, sizes and CRC-32s (cheap: the zip directory only); for other folders over relative names and file bytes,
computed on first use. `verify` re-derives the pixel-based hash to check a stored one.
"""

import functools
import hashlib
import os
import zipfile
from pathlib import Path

import numpy as np
import torch

from ganforge.data import fastformat, images, labels
from ganforge.data.files import ZipMembers, brief, read_file
from ganforge.data.shardset import ShardDataset, shard_location
from ganforge.errors import UserError
from ganforge.limits import aspect_of

_GREY_MODES = ("1", "L", "LA", "La", "I", "I;16", "I;16L", "I;16B", "I;16N")


class _FileSource:
    """Shared logic of folders and zips: a sorted list of image names read as bytes and decoded on access.

    Until the first image is read, a file may hold an image of up to MAX_RESOLUTION on a side, and from then on of
    the first image's size: each file's size and its header's image size are checked against that before decoding.
    """

    format = ""

    def __init__(self, path: Path, names: list[str], meta_file: str | None):
        if not names:
            raise UserError(f"no images ({', '.join(images.IMAGE_SUFFIXES)}) found in {path}")
        self.path, self.names, self.size = path, names, None
        try:
            first = images.decode(self.read(0), self._conversion(3).max_side)
            self.channels = 1 if first.mode in _GREY_MODES else 3
            self.height, self.width = images.image_pixels(first, self._conversion(self.channels)).shape[1:]
            self.size = (self.width, self.height)
        except images.BadImage as error:
            raise self._bad(0, error) from None
        meta, where = None, f"{path}/{meta_file}"
        if meta_file is not None:
            try:
                meta = labels.read_meta(self.read_named(meta_file, labels.metadata_cap(len(names))), where)
            except images.BadImage as error:
                raise UserError(f"{where}: {error}") from None
        self.labels, self.label_names = labels.image_labels(meta, names, where)
        self.stored_hash = (meta or {}).get("ganforge", {}).get("content_hash")

    def _conversion(self, channels: int) -> images.Conversion:
        return images.reader_conversion(channels, self.size)

    def read(self, index: int) -> bytes:
        """The bytes of image `index`, at most what an image file of this dataset may take; BadImage if not."""
        return self.read_named(self.names[index], images.max_file_bytes(self._conversion(3).max_side))

    def load(self, index: int) -> np.ndarray:
        try:
            return images.load_pixels(self.read(index), self._conversion(self.channels))
        except images.BadImage as error:
            raise self._bad(index, error) from None

    def _bad(self, index: int, error: images.BadImage) -> UserError:
        return UserError(
            f"{self.path}/{brief(self.names[index])}: {error}; `ganforge dataset build --on-error skip` "
            "makes an archive without the bad files"
        )


class FolderSource(_FileSource):
    format = "folder"

    def __init__(self, path: Path):
        names = sorted(
            p.relative_to(path).as_posix() for p in path.rglob("*") if images.is_image_name(p.name) and p.is_file()
        )
        _refuse_undecodable(path, names)
        super().__init__(path, names, "dataset.json" if (path / "dataset.json").is_file() else None)

    def read_named(self, name: str, cap: int) -> bytes:
        return read_file(self.path / name, cap)

    def fallback_hash(self) -> str:
        hasher = hashlib.sha256()
        for index, name in enumerate(self.names):
            try:
                data = self.read(index)
            except images.BadImage as error:
                raise self._bad(index, error) from None
            hasher.update(f"{name}\0{len(data)}\0".encode())
            hasher.update(data)
        return hasher.hexdigest()


def _refuse_undecodable(folder: Path, names: list[str]) -> None:
    """UserError naming the first file whose name is not UTF-8 (Python keeps its bytes as lone surrogates, which
    neither the content hash, a label table nor a printed line can encode)."""
    bad = [name for name in names if not _is_utf8(name)]
    if bad:
        shown = brief(os.fsencode(bad[0]).decode("utf-8", "backslashreplace"))  # the bytes that are not UTF-8: \xff
        raise UserError(
            f"{folder}/{shown}: its name is not UTF-8 ({len(bad)} such image file(s) in all); rename them, or make "
            "an archive of the folder with `ganforge dataset build`, which takes any name"
        )


def _is_utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class ZipSource(_FileSource):
    format = "zip"

    def __init__(self, path: Path):
        self.members = ZipMembers(path)
        names = [name for name in self.members.names if images.is_image_name(name)]
        super().__init__(path, names, "dataset.json" if "dataset.json" in self.members.names else None)
        # What the directory tells is refused now, not when training reaches the member.
        cap = images.max_file_bytes(max(self.size))
        for index, name in enumerate(names):
            problem = self.members.problem(name, cap)
            if problem:
                raise self._bad(index, images.BadImage(problem))

    def read_named(self, name: str, cap: int) -> bytes:
        return self.members.read(name, cap)

    def fallback_hash(self) -> str:
        hasher = hashlib.sha256()
        for info in self.members.infos():
            hasher.update(f"{info.filename}\0{info.file_size}\0{info.CRC}\0".encode())
        return hasher.hexdigest()


class _ImageNames:
    """`image 0`, `image 1`, ...: the names of a fast file's images, made on demand (a list would cost ~80 bytes an
    image up front)."""

    def __init__(self, count: int):
        self.count = count

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int) -> str:
        return f"image {range(self.count)[index]}"


class FastSource:
    format = "fast"

    def __init__(self, path: Path):
        try:
            header = fastformat.read_header(path)
            image_labels = fastformat.read_labels(path, header)
        except (ValueError, OSError) as error:
            raise UserError(f"{path}: damaged fast dataset ({brief(error, 200)}); rebuild it") from None
        self.path, self.header = path, header
        self.channels, self.height, self.width = header["channels"], header["height"], header["width"]
        self.names = _ImageNames(header["count"])
        self.label_names, self.labels = header["label_names"], image_labels
        self.stored_hash = header["content_hash"]
        self._images, self._pid = None, None

    def load(self, index: int) -> np.ndarray:
        """A read-only view into the memory map; callers copy it where they need it (once, into the batch)."""
        if self._pid != os.getpid():
            self._images, self._pid = fastformat.map_images(self.path, self.header), os.getpid()
        return self._images[index]

    def __getstate__(self):
        return {**self.__dict__, "_images": None, "_pid": None}


class ImageDataset(torch.utils.data.Dataset):
    """Images as uint8 tensors [C, H, W] and labels as float32 vectors [label_dim] (one-hot for class labels).

    With `mirror=True` the dataset has twice the images: index i >= N is image i - N flipped left-right.
    With `labels=False` the labels are left out (label vectors of length 0), as an unconditional network takes them.
    A DataLoader over it needs `collate_fn=ganforge.data.loader.collate`: batches come pre-stacked from __getitems__.
    """

    streamed = False  # read by index (a ShardDataset is read as a stream)

    def __init__(self, source, mirror: bool = False, labels: bool = True, what: str | None = "--data"):
        self.source, self.mirror, self.what = source, mirror, what
        self.path, self.format = source.path, source.format
        self.name = source.path.stem if source.path.is_file() else source.path.resolve().name
        self.height, self.width, self.channels = source.height, source.width, source.channels
        # the networks' resolution is the shorter side; a non-square image is (rows, cols) times it
        self.resolution, self.aspect = aspect_of(self.width, self.height)
        self.label_names = list(source.label_names)
        self.label_dim = len(self.label_names) if labels else 0
        self.raw_labels = source.labels  # class indices [N] or label vectors [N, D]; None without labels
        self.num_raw = len(source.names)

    def __len__(self) -> int:
        return self.num_raw * (2 if self.mirror else 1)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.from_numpy(np.array(self._pixels(index))), torch.from_numpy(self.label(index % self.num_raw))

    def __getitems__(self, indices: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """A whole batch, already stacked: DataLoader calls this instead of __getitem__ per image (see `collate`).

        Each image is copied once, straight from the reader (for the fast format, the memory map) into the batch.
        """
        images = _batch_tensor((len(indices), self.channels, self.height, self.width))
        batch = images.numpy()
        for slot, index in enumerate(indices):
            batch[slot] = self._pixels(index)
        labels = np.stack([self.label(index % self.num_raw) for index in indices])
        return images, torch.from_numpy(labels)

    def _pixels(self, index: int) -> np.ndarray:
        """[C, H, W] uint8, possibly a read-only view; mirrored indices (>= N) flip left-right."""
        try:
            pixels = self.source.load(index % self.num_raw)
        except UserError as error:
            raise named(error, self.what) from None
        return pixels[:, :, ::-1] if index >= self.num_raw else pixels

    def label(self, raw_index: int) -> np.ndarray:
        vector = np.zeros(self.label_dim, dtype=np.float32)
        if self.raw_labels is None or self.label_dim == 0:
            return vector
        if self.raw_labels.ndim == 2:
            return self.raw_labels[raw_index].copy()
        vector[self.raw_labels[raw_index]] = 1
        return vector

    @property
    def stored_hash(self) -> str | None:
        """The pixel-based content hash the archive records (the fast format's, a zip's written by `dataset build`),
        which `dataset verify` recomputes; None where the content hash is of the files."""
        return self.source.stored_hash

    @functools.cached_property
    def content_hash(self) -> str:
        """SHA-256 hex identifying the images and labels (see the module docstring for how each form derives it)."""
        return self.source.stored_hash or self.source.fallback_hash()


def _batch_tensor(shape: tuple[int, ...]) -> torch.Tensor:
    """An uninitialised uint8 tensor; in a DataLoader worker, allocated in shared memory as default_collate does.

    A batch leaves a worker through shared memory; allocating it there up front saves copying it over (2x the
    worker throughput of the fast format in benchmarks/data_throughput.py).
    """
    if torch.utils.data.get_worker_info() is None:
        return torch.empty(shape, dtype=torch.uint8)
    storage = torch.UntypedStorage._new_shared(int(np.prod(shape)))
    return torch.empty(0, dtype=torch.uint8).set_(storage).view(shape)


def open_source(path: Path):
    if path.is_dir():
        return FolderSource(path)
    if not path.exists():
        raise UserError(f"{path} does not exist")
    if not path.is_file():  # a FIFO or a device would block or never end
        raise UserError(f"{path} is not a folder, a zip, or a ganforge fast dataset (not a regular file)")
    if zipfile.is_zipfile(path):
        return ZipSource(path)
    if fastformat.is_fast_file(path):
        return FastSource(path)
    if path.suffix.lower() == ".zip":
        raise UserError(f"{path}: not a readable zip (its directory at the end is missing: cut short or damaged)")
    raise UserError(f"{path} is not a folder, a zip, or a ganforge fast dataset")


def named(error: UserError, what: str | None) -> UserError:
    """`error` with each problem prefixed by the option its path came from (`--data: ...`); None: a positional."""
    return UserError(*(f"{what}: {problem}" if what else problem for problem in error.problems))


def open_dataset(path, mirror: bool = False, labels: bool = True, what: str | None = "--data"):
    """Open a folder of images, a zip (ours or NVlabs'), a fast dataset (ImageDataset), or shards (ShardDataset: a
    folder or URL with index.json); `mirror` adds x-flipped copies, `labels` False leaves the labels out.

    `what` is the option that named `path` (`--data`, `--real`, ...), which every error about the data starts with,
    then and when images are read later; None for a command's positional argument (`dataset info PATH`)."""
    location = shard_location(str(path))
    if location is not None:  # errors about shards name their option already
        return ShardDataset(location, mirror=mirror, labels=labels, what=what)
    try:
        return ImageDataset(open_source(Path(path)), mirror=mirror, labels=labels, what=what)
    except UserError as error:
        raise named(error, what) from None
