"""`ganforge dataset build SRC DEST`: decode every source image once, validate, convert, and write an archive.

Outputs: a zip in NVlabs' dataset_tool layout (`00000/img00000000.png`, zlib level 0, stored, plus `dataset.json`),
a fast file (`fastformat`), or a folder of tar shards (`shards`). The output is written to `DEST.partial` and renamed
at the end, so a failed or interrupted build leaves nothing at DEST. Decoding runs in a process pool with a bounded
number of files in flight; the main process reads files, checks duplicates and writes, so memory does not grow with
the image count beyond the file list and a 16-byte digest per written image.
"""

import contextlib
import dataclasses
import json
import os
import re
import shutil
import zipfile
from pathlib import Path

import numpy as np

from ganforge import __version__
from ganforge.data import fastformat, images, labelling, labels, shards
from ganforge.data.files import ZipMembers, brief, read_file
from ganforge.data.options import BuildOptions
from ganforge.data.pool import default_workers, ordered_map
from ganforge.data.remote import is_url
from ganforge.durable import check_destination, fsync_dir, move_file
from ganforge.errors import UserError
from ganforge.limits import RESOLUTIONS, image_size_ok
from ganforge.outputs import check_writable_folder
from ganforge.progress import progress_bar
from ganforge.urls import public_url

IMAGE_SIZES_SHORT = "WxH of two such sides (the sizes `ganforge train` takes)"
_LABEL_FILE_LINE = re.compile(r".*:\d+")  # an image's name ends in its suffix, never in a line number


def read_or_reason(read, key) -> bytes | str:
    """read(key), or the reason it failed: a damaged, oversized or unreadable file is one bad file, not the end of
    the run."""
    try:
        return read(key)
    except images.BadImage as error:
        return str(error)


class SourceFiles:
    """The image files of SRC (a folder, searched recursively, or a zip), sorted by relative path."""

    def __init__(self, src: Path):
        self.src = src
        self._zip = ZipMembers(src) if src.is_file() else None
        if self._zip is None:
            every = sorted(p.relative_to(src).as_posix() for p in src.rglob("*") if p.is_file())
        else:
            every = self._zip.names
        self.names = [name for name in every if images.is_image_name(name)]
        self.ignored = len(every) - len(self.names)
        self.meta_path, self.meta = f"{src}/dataset.json", None
        if "dataset.json" in every:
            try:
                data = self._read("dataset.json", labels.metadata_cap(len(self.names)))
            except images.BadImage as error:
                raise UserError(f"{self.meta_path}: {error}") from None
            self.meta = labels.read_meta(data, self.meta_path)

    def read(self, name: str) -> bytes:
        """Source image `name`, at most `images.max_source_bytes()`; BadImage if it cannot be read."""
        return self._read(name, images.max_source_bytes())

    def _read(self, name: str, cap: int) -> bytes:
        return self._zip.read(name, cap) if self._zip is not None else read_file(self.src / name, cap)

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()


def assign_labels(files: SourceFiles, spec: str) -> labelling.Labelling:
    """The labels `--labels` asks for: none, sub-folders' names, SRC's dataset.json, or a CSV file."""
    if spec == "auto":
        spec = "source" if files.meta and files.meta.get("labels") else "none"
    if spec == "none":
        return labelling.NONE
    if spec == "folders":
        return labelling.folder_classes(files.names)
    if spec == "source":
        return labelling.source_labels(files.meta, files.names, files.meta_path)
    try:
        data = read_file(Path(spec), labels.metadata_cap(len(files.names)))
    except images.BadImage as error:
        raise UserError(f"--labels {spec}: {error}") from None
    return labelling.csv_labels(data, Path(spec), files.names)


def target_size(resolution) -> tuple[int, int] | None:
    """--resolution as (width, height): a side R is R x R."""
    return (resolution, resolution) if isinstance(resolution, int) else resolution


def check_options(src: Path, dest: Path, options: BuildOptions) -> str:
    """Every problem with the arguments at once, as one UserError; returns the output format."""
    fmt = options.format or ("zip" if dest.suffix.lower() == ".zip" else "fast")
    size = target_size(options.resolution)
    r = options.resolution if size is None or size[0] == size[1] else f"{size[0]}x{size[1]}"
    checks = [
        (src.is_dir() or zipfile.is_zipfile(src), f"SRC: {src} is not a folder or a zip"),
        (not dest.exists(), f"DEST: {dest} already exists; remove it or choose another path"),
        (dest.parent.is_dir(), f"DEST: folder {dest.parent} does not exist"),
        (fmt != "zip" or dest.suffix.lower() == ".zip", "DEST: a zip archive must end in .zip (NVlabs' loaders look)"),
        (fmt != "fast" or dest.suffix.lower() != ".zip", "DEST: a fast dataset must not end in .zip; use .gfd"),
        (fmt == "shards" or options.shard_size is None, "--shard-size: only with --format shards"),
        (fmt == "shards" or options.shard_encoding == "png", "--shard-encoding: only with --format shards"),
        (size is None or image_size_ok(*size), f"--resolution: {r} is not {RESOLUTIONS}, nor {IMAGE_SIZES_SHORT}"),
        (
            size is None or size[0] == size[1] or options.transform != "center-crop-wide",
            "--transform center-crop-wide: pads to square; for a non-square --resolution use center-crop",
        ),
        (r is not None or options.transform == "none", f"--resolution: required with --transform {options.transform}"),
        (
            options.labels in ("auto", "folders", "source", "none") or Path(options.labels).is_file(),
            f"--labels: {options.labels} is none of auto, folders, source, none, nor an existing CSV file",
        ),
    ]
    problems = options.value_problems() + [message for ok, message in checks if not ok]
    if options.shard_size is not None:
        try:
            shards.parse_size(options.shard_size)
        except ValueError as error:
            problems.append(f"--shard-size: {error}")
    if dest.parent.is_dir():
        try:
            check_writable_folder(dest.parent, "DEST")
        except UserError as error:
            problems += error.problems
    if problems:
        raise UserError(*problems)
    return fmt


def process_file(item: tuple) -> tuple:
    """Pool work for one file: ("bad", reason) or ("ok", digest, shape, payload), the payload PNG bytes for a zip or
    PNG shards, pixels for the fast format or raw shards, None when only checking ("digest")."""
    data, conversion, payload_kind = item
    if isinstance(data, str):
        return "bad", data
    try:
        pixels = images.load_pixels(data, conversion)
    except images.BadImage as error:
        return "bad", str(error)
    payload = images.encode_png(pixels) if payload_kind == "png" else pixels if payload_kind == "pixels" else None
    return "ok", images.digest(pixels), pixels.shape, payload


def payload_kind(fmt: str, options: BuildOptions) -> str:
    """What each decoded image is written as: "png" bytes or raw "pixels"."""
    if fmt == "shards":
        return "png" if options.shard_encoding == "png" else "pixels"
    return "png" if fmt == "zip" else "pixels"


class ZipWriter:
    """Writes NVlabs' layout: stored (uncompressed) members with a fixed timestamp, so equal inputs give equal bytes."""

    def __init__(self, path: Path):
        self.count = 0
        self._zip = zipfile.ZipFile(path, "x", compression=zipfile.ZIP_STORED)

    @staticmethod
    def member_name(index: int) -> str:
        digits = f"{index:08d}"
        return f"{digits[:5]}/img{digits}.png"

    def add(self, png: bytes) -> None:
        self._zip.writestr(zipfile.ZipInfo(self.member_name(self.count), date_time=(1980, 1, 1, 0, 0, 0)), png)
        self.count += 1

    def finish(self, labels: np.ndarray | None, header: dict) -> None:
        """Write dataset.json: NVlabs' labels (class indices, or label vectors as lists of numbers) and ours."""
        entries = None if labels is None else [[self.member_name(i), label] for i, label in enumerate(labels.tolist())]
        meta = {"labels": entries, "label_names": header["label_names"], "ganforge": {"format_version": 1, **header}}
        self._zip.writestr(zipfile.ZipInfo("dataset.json", date_time=(1980, 1, 1, 0, 0, 0)), json.dumps(meta))
        self.close()

    def close(self) -> None:
        self._zip.close()


class _Build:
    """The state of one build: writer, duplicate table and problem list, fed one decoded result at a time."""

    def __init__(self, fmt: str, partial: Path, label_kind: str, label_names: list[str], options: BuildOptions):
        self.fmt, self.partial, self.options = fmt, partial, options
        self.label_kind, self.label_names = label_kind, label_names
        fail_fast_writes = options.on_error == "fail"
        self.skip_writes_after_problem = fail_fast_writes
        self.problems: list[tuple[str, str]] = []
        self.shape, self.writer, self.hasher = None, None, None
        self.first_of: dict[bytes, str] = {}
        self.labels: list = []  # class indices, or float32 label vectors
        self.report_partial = partial.with_name(partial.name.removesuffix(".partial") + ".report.json.partial")

    def accept(self, name: str, result: tuple, label) -> None:
        """Take one decoded result and its label (a class index, a label vector, or None without labels)."""
        if result[0] == "bad":
            self.problems.append((name, result[1]))
            return
        _, digest, shape, payload = result
        if self.shape is None:
            self._open(shape)
        if shape != self.shape:
            first = f"{self.shape[2]}x{self.shape[1]}"
            self.problems.append((name, f"size {shape[2]}x{shape[1]} differs from the first image's {first}"))
            return
        if digest[:16] in self.first_of:
            self.problems.append((name, f"exact duplicate of {self.first_of[digest[:16]]}"))
            return
        self.first_of[digest[:16]] = name
        if self.skip_writes_after_problem and self.problems:
            return  # --on-error fail: nothing will be kept, so only validate from here on
        with writing(self.partial):
            if self.fmt == "shards":  # a shard holds each sample's label beside it: a class by name
                self.writer.add(payload, self.label_names[label] if self.label_kind == "class" else label)
            else:  # the other formats write every label at the end
                self.writer.add(payload)
        self.hasher.add(digest)
        if label is not None:
            self.labels.append(label)

    def _open(self, shape: tuple) -> None:
        self.shape = shape
        channels, height, width = shape
        # --resolution is checked against the limits, and each image kept at its own size is checked when read.
        assert image_size_ok(width, height), shape
        with writing(self.partial):
            remove(self.partial)  # left by a build that was killed; the writers create exclusively
            if self.fmt == "zip":
                self.writer = ZipWriter(self.partial)
            elif self.fmt == "shards":
                size = self.options.shard_size
                shard_bytes = shards.DEFAULT_SHARD_BYTES if size is None else shards.parse_size(size)
                self.writer = shards.ShardWriter(self.partial, self.options.shard_encoding, shard_bytes)
            else:
                self.writer = fastformat.FastWriter(self.partial, channels, height, width)
        self.hasher = fastformat.ContentHasher()

    def finish(self, build_info: dict) -> str:
        label_names, labels = self._used_labels()
        content_hash = self.hasher.finish(self.shape[0], self.shape[1:], label_names, labels)
        header = {"count": self.writer.count, "channels": self.shape[0], **fastformat.size_fields(*self.shape[1:])}
        with writing(self.partial):
            self.writer.finish(
                labels, {**header, "label_names": label_names, "content_hash": content_hash, "build": build_info}
            )
        return content_hash

    def _used_labels(self) -> tuple[list[str], np.ndarray | None]:
        """Drop classes left without images (all their files were bad) so that every class has images; label vectors
        keep every entry."""
        if self.label_kind == "none" or not self.label_names:
            return [], None
        if self.label_kind == "vector":
            return self.label_names, np.stack(self.labels).astype(np.float32)
        used = sorted(set(self.labels))
        new_index = {old: new for new, old in enumerate(used)}
        return [self.label_names[i] for i in used], np.array([new_index[c] for c in self.labels], dtype=np.int64)

    def discard(self) -> None:
        """Remove every partial output. Runs while another error propagates: closing a writer on a full disk fails
        again (its buffered bytes cannot be flushed), which must not keep the partial files from being removed."""
        if self.writer is not None:
            with contextlib.suppress(OSError):
                self.writer.close()
        for path in (self.partial, self.report_partial):
            with contextlib.suppress(OSError):
                remove(path)


def remove(path: Path) -> None:
    """Remove a file or a folder of shards at `path`, if there is one (never following a link)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


@contextlib.contextmanager
def writing(path: Path):
    """An OSError while writing `path` (a full disk, a folder made read-only or removed meanwhile) -> UserError."""
    try:
        yield
    except OSError as error:
        raise UserError(
            f"DEST: cannot write {path} ({error.strerror or type(error).__name__}); free space or pass another "
            "DEST; nothing was written"
        ) from None


def build(src, dest, options: BuildOptions | None = None) -> dict:
    """Validate SRC and write DEST; returns a summary dict. Raises UserError listing every problem (--on-error fail)."""
    if is_url(str(src)):  # a Path of it would merge its slashes and name some local path
        raise UserError(
            f"SRC: {public_url(str(src))} is a URL; dataset build reads a local folder or zip: copy the images to this "
            "machine first (shards at a URL are read where they are, by training and by dataset info and verify)"
        )
    src, dest, options = Path(src), Path(dest), options or BuildOptions()
    fmt = check_options(src, dest, options)
    for output in (dest, dest.with_name(dest.name + ".report.json")):  # a device or link there is refused first
        check_destination(output)
    files = SourceFiles(src)
    try:
        labelled = assign_labels(files, options.labels)
        names, label_problems = _select(files.names, options.max_images, labelled.problems)
        state = _Build(fmt, dest.with_name(dest.name + ".partial"), labelled.kind, labelled.names, options)
        try:
            _decode_all(files, names, labelled, state, options, fmt)
            state.problems = sorted(state.problems + list(label_problems.items()))
            summary = _finish(src, dest, state, options, fmt)
        except BaseException:
            state.discard()
            raise
    finally:
        files.close()
    summary["ignored"] = files.ignored
    return summary


def _select(all_names: list[str], max_images: int | None, label_problems: dict) -> tuple[list[str], dict]:
    """The files to decode, and the labelling problems that concern the build (not files past --max-images)."""
    considered = all_names[:max_images]
    dropped = set(all_names[len(considered) :])
    names = [name for name in considered if name not in label_problems]
    return names, {key: reason for key, reason in label_problems.items() if key not in dropped}


def _decode_all(files, names, labelled: labelling.Labelling, state: _Build, options: BuildOptions, fmt: str) -> None:
    size = target_size(options.resolution)
    conversion = images.Conversion(options.channels, size, options.transform, options.resize_filter)
    workers = default_workers() if options.workers is None else options.workers
    if fmt == "shards":  # each shard a random sample of the dataset (see ganforge.data.shards)
        names = [names[i] for i in shards.build_order(len(names))]
    kind = payload_kind(fmt, options)
    items = ((read_or_reason(files.read, name), conversion, kind) for name in names)
    progress = progress_bar(total=len(names), unit="img", desc="build", mininterval=1.0)
    with progress:
        for name, result in zip(names, ordered_map(process_file, items, workers), strict=True):
            state.accept(name, result, labelled.of.get(name))
            progress.update()


def move_folder(src: Path, dest: Path) -> None:
    """Put the finished folder of shards at `dest`: every file fsynced, then one rename and the parent fsynced."""
    with writing(dest):
        for path in src.iterdir():
            with open(path, "rb") as file:
                os.fsync(file.fileno())
        fsync_dir(src)
        os.rename(src, dest)
        fsync_dir(dest.parent)


def failure(listed: list[str], advice: str) -> UserError:
    """Each problem on its line, then what to do; a lone problem and the advice share one line."""
    if len(listed) == 1:
        return UserError(f"{listed[0]}; {advice}")
    return UserError(*listed, f"{len(listed)} problems; {advice}")


def _shown(src: Path, name: str) -> str:
    """A problem's place: a source file under SRC, or a label file's line (`labels.csv:3`, no image name)."""
    return name if _LABEL_FILE_LINE.fullmatch(name) else f"{src}/{brief(name)}"


def _finish(src: Path, dest: Path, state: _Build, options: BuildOptions, fmt: str) -> dict:
    listed = [f"{_shown(src, name)}: {reason}" for name, reason in state.problems]
    if state.problems and options.on_error == "fail":
        raise failure(
            listed,
            "nothing written. Fix or remove these files, or pass --on-error skip to build from the "
            "good images and list the rest in DEST.report.json",
        )
    if state.writer is None or state.writer.count == 0:
        raise failure(listed or [f"SRC: {src}"], "no usable image; nothing written")
    # The worker count changes nothing in the output, so it is left out: equal inputs give byte-identical archives.
    options_used = {key: value for key, value in dataclasses.asdict(options).items() if key != "workers"}
    build_info = {"source": str(src), "ganforge": __version__, **options_used, "format": fmt}
    content_hash = state.finish(build_info)
    summary = {
        "dest": str(dest),
        "format": fmt,
        "written": state.writer.count,
        "content_hash": content_hash,
        "skipped": [{"file": name, "reason": reason} for name, reason in state.problems],
        "report": None,
    }
    report = dest.with_name(dest.name + ".report.json")
    if options.on_error == "skip":
        summary["report"] = str(report)
        with writing(state.report_partial):
            state.report_partial.unlink(missing_ok=True)
            state.report_partial.write_text(json.dumps({**summary, "build": build_info}, indent=1))
    # Both outputs are complete before either is renamed into place.
    if fmt == "shards":
        move_folder(state.partial, dest)
    else:
        move_file(state.partial, dest)
    if options.on_error == "skip":
        move_file(state.report_partial, report)
    return summary
