"""`ganforge dataset info` (what an archive holds) and `ganforge dataset verify` (decode and re-hash everything)."""

import hashlib
from pathlib import Path

import numpy as np

from ganforge.data import build, fastformat, images
from ganforge.data.archive import open_dataset
from ganforge.data.files import brief
from ganforge.data.pool import default_workers, ordered_map
from ganforge.errors import UserError
from ganforge.limits import RESOLUTIONS, resolution_ok
from ganforge.progress import progress_bar


def info(path) -> dict:
    """Count, resolution, channels, label histogram, content hash and format of a dataset."""
    ds = open_dataset(path, what=None)
    labels = ds.class_counts if ds.format == "shards" else ds.raw_labels
    if ds.format == "shards" and labels is not None:  # the index counts each shard's classes
        histogram = {name: int(count) for name, count in zip(ds.label_names, labels, strict=True)}
    elif labels is None:
        histogram = {}
    elif labels.ndim == 1:
        counts = np.bincount(labels, minlength=ds.label_dim)
        histogram = {name: int(count) for name, count in zip(ds.label_names, counts, strict=True)}
    else:
        histogram = None  # NVlabs-style label vectors have no classes to count
    return {
        "path": str(path),
        "format": ds.format,
        "count": ds.num_raw,
        "resolution": ds.resolution,
        "channels": ds.channels,
        "label_dim": ds.label_dim,
        "label_histogram": histogram,
        "content_hash": ds.content_hash,
        "content_hash_kind": "pixels" if ds.format == "shards" or ds.source.stored_hash else "files",
        "problems": _header_problems(ds),
        "verified": False,
    }


def _header_problems(ds) -> list[str]:
    """What `info` can tell without decoding every image: the limits `train` applies."""
    if resolution_ok(ds.resolution):
        return []
    return [
        f"resolution {ds.resolution} is not one `ganforge train` takes ({RESOLUTIONS}); rebuild with "
        "`ganforge dataset build --resolution R`"
    ]


def info_text(summary: dict) -> str:
    shown = {key: value for key, value in summary.items() if key not in ("label_histogram", "problems", "verified")}
    lines = [f"{key}: {value}" for key, value in shown.items()]
    histogram = summary["label_histogram"]
    if histogram is None:
        lines.append("labels: vectors (no classes)")
    elif histogram:
        lines += ["labels:"] + [f"  {name}: {count}" for name, count in histogram.items()]
    else:
        lines.append("labels: none")
    lines += [f"problem: {problem}" for problem in summary["problems"]]
    lines.append(f"not verified: `ganforge dataset verify {summary['path']}` decodes every image and checks the hash")
    return "\n".join(lines)


def verify(path, workers: int | None = None) -> dict:
    """Decode every image and recompute the content hash; UserError listing every problem found."""
    ds = open_dataset(path, what=None)
    workers = default_workers() if workers is None else workers
    labels = None if ds.format == "shards" else ds.raw_labels
    if ds.format == "fast":
        digests, problems = _fast_digests(ds)
    elif ds.format == "shards":
        digests, labels, problems = _shard_digests(ds, workers)
    else:
        digests, problems = _file_digests(ds, workers)
    stored = ds.content_hash if ds.format == "shards" else ds.source.stored_hash
    if stored and not problems:
        hasher = fastformat.ContentHasher()
        for digest in digests:
            hasher.add(digest)
        computed = hasher.finish(ds.channels, ds.resolution, ds.label_names, labels)
        if computed != stored:
            problems.append(
                f"{path}: content hash mismatch: recorded {stored}, the data hashes to {computed}; "
                "the archive was modified or damaged, rebuild it"
            )
    if len(problems) > 1:
        raise UserError(*problems, f"{path}: {len(problems)} problems")
    if problems:
        raise UserError(*problems)
    return {
        "path": str(path),
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
    """Digests and class indices of every image in index order, each shard's bytes checked against its SHA-256."""
    digests, classes, problems = [], [], []

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
                for (image_digest, problem), class_index in _decoded(samples, where, digest, workers):
                    digests.append(image_digest)
                    classes.append(class_index)
                    problems += [problem] if problem else []
                    progress.update()
            except UserError as error:  # the shard itself is damaged: the rest of it cannot be read
                problems += error.problems
                continue
            if hasher.hexdigest() != shard["sha256"]:
                problems.append(f"{where}: its SHA-256 is not index.json's; the shard was modified or damaged")
    labels = np.array(classes, dtype=np.int64) if ds.label_names else None
    return digests, labels, problems


def _decoded(samples, where: str, digest, workers: int):
    """((digest, problem), class index) per sample, decoded by `workers` threads in order."""
    classes = []

    def items():
        for image, class_index in samples:
            classes.append(class_index)
            yield image, where

    for position, result in enumerate(ordered_map(digest, items(), workers, threads=True)):
        yield result, classes[position]


def _file_digests(ds, workers: int) -> tuple[list[bytes], list[str]]:
    source = ds.source
    conversion = images.reader_conversion(ds.channels, ds.resolution)
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
