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
    existing = _nearest_existing(folder)
    if not existing.is_dir():
        raise UserError(f"{what} {folder}: {existing} is a file, so no folder can be made there; pass another path")
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as error:
        raise UserError(
            f"{what} {folder}: cannot write in {existing} ({error.strerror or error}); pass a folder you can write to"
        ) from None


def free_bytes(folder: Path) -> int:
    """Free bytes on the disk that holds (or will hold) `folder`."""
    return shutil.disk_usage(_nearest_existing(folder)).free


def _nearest_existing(folder: Path) -> Path:
    """`folder` itself when it exists, else the closest ancestor that does (where it would be created)."""
    existing = Path(folder).absolute()
    while not existing.exists():
        existing = existing.parent
    return existing
