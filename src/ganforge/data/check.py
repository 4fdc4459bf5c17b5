"""`ganforge dataset info` (what an archive holds) and `ganforge dataset verify` (decode and re-hash everything)."""

import hashlib
import types
from pathlib import Path

import numpy as np

from ganforge.data import build, distribution, fastformat, images
from ganforge.data.archive import open_dataset
from ganforge.data.files import brief
from ganforge.data.options import VERIFY_OPTIONS
from ganforge.data.pool import default_workers, ordered_map
from ganforge.data.remote import ServerError
from ganforge.errors import UserError
from ganforge.limits import IMAGE_SIZES, image_size_ok
from ganforge.option import value_problems
from ganforge.progress import progress_bar
from ganforge.urls import public_url


def info(path) -> dict:
    """Count, resolution, channels, label distribution, content hash and format of a dataset."""
    ds = open_dataset(path, what=None)
    return {
        "path": public_url(str(path)),
        "format": ds.format,
        "count": ds.num_raw,
        "resolution": ds.resolution,
        "width": ds.width,
        "height": ds.height,
        "channels": ds.channels,
        "label_dim": ds.label_dim,
        "labels": label_summary(ds),
        "content_hash": ds.content_hash,
        "content_hash_kind": "pixels" if ds.stored_hash else "files",
        "problems": _header_problems(ds),
        "verified": False,
    }


def label_summary(ds) -> dict:
    """The label distribution of an opened dataset (see ganforge.data.distribution); shards of classes count them
    in their index, without reading a shard."""
    if ds.format == "shards" and ds.class_counts is not None:
        return distribution.class_distribution(ds.label_names, ds.class_counts)
    return distribution.distribution(ds.label_names, ds.raw_labels)


def _header_problems(ds) -> list[str]:
    """What `info` can tell without decoding every image: the limits `train` applies."""
    if image_size_ok(ds.width, ds.height):
        return []
    return [
        f"size {ds.width}x{ds.height} is not one `ganforge train` takes ({IMAGE_SIZES}); rebuild with "
        "`ganforge dataset build --resolution R` (or WxH)"
    ]


def info_text(summary: dict) -> str:
    shown = {key: value for key, value in summary.items() if key not in ("labels", "problems", "verified")}
    lines = [f"{key}: {value}" for key, value in shown.items()]
    lines += distribution.distribution_lines(summary["labels"])
    lines += [f"problem: {problem}" for problem in summary["problems"]]
    lines.append(f"not verified: `ganforge dataset verify {summary['path']}` decodes every image and checks the hash")
    return "\n".join(lines)


def verify(path, workers: int | None = None) -> dict:
    """Decode every image and recompute the content hash; UserError listing every problem found."""
    problems = value_problems(VERIFY_OPTIONS, types.SimpleNamespace(workers=workers))
    if problems:
        raise UserError(*problems)
    ds, shown = open_dataset(path, what=None), public_url(str(path))
    workers = default_workers() if workers is None else workers
    labels = None if ds.format == "shards" else ds.raw_labels
    if ds.format == "fast":
        digests, problems = _fast_digests(ds)
    elif ds.format == "shards":
        digests, labels, problems = _shard_digests(ds, workers)
    else:
        digests, problems = _file_digests(ds, workers)
    stored = ds.stored_hash
    if stored and not problems:
        hasher = fastformat.ContentHasher()
        for digest in digests:
            hasher.add(digest)
        computed = hasher.finish(ds.channels, (ds.height, ds.width), ds.label_names, labels)
        if computed != stored:
            problems.append(
                f"{shown}: content hash mismatch: recorded {stored}, the data hashes to {computed}; "
                "the archive was modified or damaged, rebuild it"
            )
    if len(problems) > 1:
        raise UserError(*problems, f"{shown}: {len(problems)} problems")
    if problems:
        raise UserError(*problems)
    return {
        "path": shown,
        "format": ds.format,
        "count": ds.num_raw,
        "content_hash": ds.content_hash,
        "hash_checked": bool(stored),
    }


def _fast_digests(ds) -> tuple[list[bytes], list[str]]:
    """Digests of every image; the header and the class indices were checked when the file was opened."""
    pixels = ds.source
    digests = [
        images.digest(np.asarray(pixels.load(i)))
        for i in progress_bar(range(ds.num_raw), unit="img", desc="verify", mininterval=1.0)
    ]
    return digests, []


def _shard_digests(ds, workers: int) -> tuple[list[bytes], np.ndarray | None, list[str]]:
    """Digests and labels (class indices or label vectors) of every image in index order, each shard's bytes checked
    against its SHA-256, and label vectors against labels.f32."""
    digests, sample_labels, problems = [], [], []

    def digest(item) -> tuple[bytes | None, str | None]:
        image, where = item
        try:
            return images.digest(ds.decode(image, where)), None
        except UserError as error:
            return None, error.problems[0]

    progress = progress_bar(total=ds.num_raw, unit="img", desc="verify", mininterval=1.0)
    with progress:
        for number, shard in enumerate(ds.shards):
            hasher, where = hashlib.sha256(), ds.where(number)
            samples = ds.samples(number, hasher)
            try:
                for (image_digest, problem), label in _decoded(samples, where, digest, workers):
                    digests.append(image_digest)
                    sample_labels.append(label)
                    problems += [problem] if problem else []
                    progress.update()
            except ServerError:  # the server failed, not the shard: the next shards would fail alike
                raise
            except UserError as error:  # the shard itself is damaged: the rest of it cannot be read
                problems += error.problems
                continue
            if hasher.hexdigest() != shard["sha256"]:
                problems.append(f"{where}: its SHA-256 is not index.json's; the shard was modified or damaged")
    if not ds.label_names or problems:
        return digests, None, problems
    if not ds.vectors:
        return digests, np.array(sample_labels, dtype=np.int64), problems
    labels = np.stack(sample_labels)
    if not np.array_equal(labels, ds.raw_labels):
        problems.append(f"{ds.public}: labels.f32 differs from the samples' .json labels; rebuild the shards")
    return digests, labels, problems


def _decoded(samples, where: str, digest, workers: int):
    """((digest, problem), label) per sample, decoded by `workers` threads in order."""
    sample_labels = []

    def items():
        for image, label in samples:
            sample_labels.append(label)
            yield image, where

    for position, result in enumerate(ordered_map(digest, items(), workers, threads=True)):
        yield result, sample_labels[position]


def _file_digests(ds, workers: int) -> tuple[list[bytes], list[str]]:
    source = ds.source
    conversion = images.reader_conversion(ds.channels, (ds.width, ds.height))
    items = ((build.read_or_reason(source.read, i), conversion, "digest") for i in range(ds.num_raw))
    digests, problems = [], []
    results = ordered_map(build.process_file, items, workers)
    for name, result in progress_bar(
        zip(source.names, results, strict=True),
        total=ds.num_raw,
        unit="img",
        desc="verify",
        mininterval=1.0,
    ):
        if result[0] == "bad":
            problems.append(f"{Path(ds.path) / brief(name)}: {result[1]}")
        else:
            digests.append(result[1])
    return digests, problems
