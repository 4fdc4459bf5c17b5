"""Reads an offline W&B run back from the files it wrote, for the tests of track.wandb_tracker.

An offline run keeps everything it logged in `wandb/offline-run-<time>-<id>/run-<id>.wandb`, the transaction log that
`wandb sync` uploads later. Its format is LevelDB's log format (as W&B's own writer, wandb-core's `store` package, and
the pure-Python `wandb.sdk.internal.datastore` it replaced describe it): a 7-byte file header (`:W&B`, magic 0xBEE1
little-endian, version 0), then 32 KiB blocks of chunks, each `crc32(type + data) u32 | length u16 | type u8 | data`,
type FULL=1 or FIRST/MIDDLE/LAST=2/3/4 for a record split across blocks; a block's tail shorter than a chunk header
is zero padding. Each record is a `wandb.proto.wandb_internal_pb2.Record`. W&B 0.31 ships no Python reader (the
datastore module went with the move to wandb-core), hence this small one.
"""

import json
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from wandb.proto import wandb_internal_pb2

FILE_HEADER = b":W&B" + struct.pack("<HB", 0xBEE1, 0)
BLOCK = 32768
CHUNK_HEADER = struct.Struct("<IHB")  # crc32, length, type
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


@dataclass
class OfflineRun:
    """What one offline run folder holds: the run's id, project, name and start time, its config, history rows (each
    with `_step`), summary, the paths of saved files (relative to the run's `files/` folder), the exit code (None: no
    exit record), whether it was marked preempting, and W&B alert records (title, text)."""

    folder: Path
    run_id: str = ""
    project: str = ""
    name: str = ""
    start_time: float = 0.0
    config: dict = field(default_factory=dict)
    history: list[dict] = field(default_factory=list)
    summary: dict = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    exit_code: int | None = None
    preempting: bool = False
    alerts: list[tuple[str, str]] = field(default_factory=list)


def read_records(path: Path) -> list[wandb_internal_pb2.Record]:
    """Every record of a `.wandb` transaction log, checking each chunk's CRC."""
    data = path.read_bytes()
    assert data[: len(FILE_HEADER)] == FILE_HEADER, f"{path}: not a W&B transaction log"
    records, pending, pos = [], b"", len(FILE_HEADER)
    while pos + CHUNK_HEADER.size <= len(data):
        if BLOCK - pos % BLOCK < CHUNK_HEADER.size:  # zero padding at the end of a block
            pos += BLOCK - pos % BLOCK
            continue
        crc, length, kind = CHUNK_HEADER.unpack_from(data, pos)
        chunk = data[pos + CHUNK_HEADER.size : pos + CHUNK_HEADER.size + length]
        assert zlib.crc32(bytes([kind]) + chunk) == crc, f"{path}: bad checksum at byte {pos}"
        pos += CHUNK_HEADER.size + length
        pending = chunk if kind in (FULL, FIRST) else pending + chunk
        if kind in (FULL, LAST):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            records.append(record)
    return records


def _items(items) -> dict:
    """Config, history and summary items as a dict: `key` -> decoded `value_json`; a `nested_key` path (W&B splits
    a logged image into `key/path`, `key/width`, ...) becomes nested dicts."""
    out = {}
    for item in items:
        *parents, last = [item.key] if item.key else item.nested_key
        node = out
        for name in parents:
            node = node.setdefault(name, {})
        node[last] = json.loads(item.value_json)
    return out


def read_run(folder: Path) -> OfflineRun:
    """The run in one `offline-run-*` folder."""
    (log,) = folder.glob("run-*.wandb")
    run = OfflineRun(folder=folder)
    for record in read_records(log):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            run.run_id, run.project, run.name = record.run.run_id, record.run.project, record.run.display_name
            run.start_time = record.run.start_time.ToNanoseconds() / 1e9
            run.config.update(_items(record.run.config.update))
        elif kind == "config":
            run.config.update(_items(record.config.update))
        elif kind == "history":
            run.history.append(_items(record.history.item))
        elif kind == "summary":
            run.summary.update(_items(record.summary.update))
        elif kind == "files":
            run.files += [item.path for item in record.files.files]
        elif kind == "exit":
            run.exit_code = record.exit.exit_code
        elif kind == "preempting":
            run.preempting = True
        elif kind == "alert":
            run.alerts.append((record.alert.title, record.alert.text))
    return run


def read_runs(wandb_dir: Path, run_id: str) -> list[OfflineRun]:
    """Every offline part of the run `run_id` under `wandb_dir` (W&B's `wandb/` folder), oldest first: a resumed
    offline run writes a new folder `offline-run-<time>-<id>`, with `-1`, `-2`, ... appended within one second."""
    parts = [read_run(log.parent) for log in wandb_dir.glob(f"offline-run-*/run-{run_id}.wandb")]
    return sorted(parts, key=lambda part: part.start_time)
