"""Where a command will write, checked before it does any work: a folder that can be made and written to.

A command that computes for an hour and then cannot write its result has lost the hour; one that leaves a traceback
for a read-only folder has not told the user what to change. Both are checked here, without creating anything.
"""

import shutil
import tempfile
from pathlib import Path

from ganforge.errors import UserError


def check_writable_folder(folder: Path, what: str) -> None:
    """Raise UserError (naming `what`, the flag or argument) unless `folder` exists or can be created, and a file can
    be written in it. Nothing is left behind: the probe file is made in the nearest existing folder and removed."""
    folder = Path(folder)
    existing = folder.absolute()
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise UserError(f"{what} {folder}: {existing} is a file, so no folder can be made there; pass another path")
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as error:
        raise UserError(
            f"{what} {folder}: cannot write in {existing} ({error.strerror or error}); pass a folder you can write to"
        ) from None


def check_free_space(folder: Path, need_bytes: int, what: str, purpose: str) -> None:
    """Raise UserError (naming `what`) when the disk that will hold `folder` has less than `need_bytes` free, which
    `purpose` (e.g. "the first checkpoint") needs: better refused now than after the first hour of training."""
    existing = Path(folder).absolute()
    while not existing.exists():
        existing = existing.parent
    free = shutil.disk_usage(existing).free
    if free < need_bytes:
        raise UserError(
            f"{what} {folder}: {free / 2**20:,.0f} MiB free on its disk, but {purpose} needs about "
            f"{need_bytes / 2**20:,.0f} MiB; free some space or pass a folder on another disk"
        )
