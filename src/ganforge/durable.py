"""Durable file writes shared by checkpoints, snapshots and the metrics cache.

A crash (power cut, full disk, `kill -9`) must leave either the old file or the complete new one, never a partial
file under the final name: bytes go to a file that is fsynced before it is renamed, and the folder is fsynced after.
"""

import os
from pathlib import Path


def write_file(path: Path, data: bytes) -> None:
    """Write `data` to a new file (it must not exist) and fsync it, so a later rename cannot expose a partial file."""
    with open(path, "xb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())


def fsync_dir(path: Path) -> None:
    """Make a rename or file creation inside `path` durable (POSIX; a no-op where folders cannot be opened)."""
    if os.name != "posix":
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_file(path: Path, data: bytes) -> None:
    """Atomically put `data` at `path` (created or replaced): temporary file in the same folder, fsync, rename,
    fsync the folder. On any failure the temporary file is removed and `path` is untouched."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        write_file(tmp, data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)  # only still there if writing failed
    fsync_dir(path.parent)


def move_file(src: Path, path: Path) -> None:
    """Atomically put a file that a library wrote at `src` (same file system) at `path`: fsync it, rename it over
    `path`, fsync the folder. For writers that take a file name rather than bytes (model exporters)."""
    with open(src, "rb") as file:
        os.fsync(file.fileno())
    os.replace(src, path)
    fsync_dir(Path(path).parent)
