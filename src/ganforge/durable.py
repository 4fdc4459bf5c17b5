"""Durable file writes shared by every output: snapshots, reports, images, exports, the metrics cache.

A crash (power cut, full disk, `kill -9`) must leave either the old file or the complete new one, never a partial
file under the final name: bytes go to a file that is fsynced before it is renamed, and the folder is fsynced after.

Renaming over a path replaces whatever is there, so the destination is checked first: only a regular file (or
nothing) may be replaced. A device (`--out /dev/null`), a FIFO, a socket or a folder would be swapped for a regular
file, and a symbolic link would be replaced by a file rather than written through: each is refused, naming the path.
A write that fails (read-only folder, full disk, missing folder) is a `WriteError`, a UserError naming the path.
"""

import contextlib
import errno
import os
import stat
from pathlib import Path

from ganforge.errors import UserError

MAX_SHOWN_CHARS = 200  # a link target is shown up to this many characters

_KINDS = (
    (stat.S_ISDIR, "folder"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
    (stat.S_ISFIFO, "FIFO (named pipe)"),
    (stat.S_ISSOCK, "socket"),
    (stat.S_ISLNK, "symbolic link"),
)
_HINTS = {
    errno.ENOSPC: "free some space or write elsewhere",
    errno.EDQUOT: "free some space (disk quota) or write elsewhere",
    errno.EFBIG: "the file is larger than this file system or process may write; write elsewhere",
    errno.EROFS: "the file system is read-only; write elsewhere",
    errno.EACCES: "choose a folder you can write to",
    errno.EPERM: "choose a folder you can write to",
    errno.ENOENT: "its folder does not exist; create it or choose another path",
    errno.ENOTDIR: "a part of the path is a file, not a folder; choose another path",
}


class WriteError(UserError):
    """An output could not be written (or may not be replaced); nothing was left at or beside its path."""


def shorten(text: str, limit: int = MAX_SHOWN_CHARS) -> str:
    """`text` for a message: at most `limit` characters, with an ellipsis where it was cut."""
    text = str(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_destination(path: Path) -> None:
    """WriteError unless `path` is absent or a regular file (not followed when it is a symbolic link).

    A link is refused rather than followed: following it would let whoever can write the output's folder point a
    routine rewrite (report.html at every snapshot) at any file the user can write; replacing it would silently
    break the link. The fix is the user's to choose: name the link's target, or remove the link. (A folder above
    the file may be a link: that is where the user keeps the outputs, not the output itself.)"""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return  # nothing there; a parent that is a file is reported by the write itself
    except OSError as error:
        raise WriteError(f"{shorten(path)}: cannot check the destination ({error.strerror or error})") from None
    if stat.S_ISREG(mode):
        return
    kind = next((name for test, name in _KINDS if test(mode)), "special file")
    if stat.S_ISLNK(mode):
        with contextlib.suppress(OSError):  # gone or changed since lstat: the message names the path alone
            kind = f"symbolic link (to {shorten(os.readlink(path))})"
        raise WriteError(
            f"{shorten(path)}: is a {kind}; outputs are not written through links (renaming a new file "
            "into place would replace the link, not what it points to): name the target instead, or "
            "remove the link"
        )
    raise WriteError(
        f"{shorten(path)}: is a {kind}, not a regular file; outputs are written only as regular files "
        f"(renaming a new file into place would replace the {kind}): choose another path"
    )


def write_problem(path: Path, error: OSError) -> str:
    """The one line for a failed write of `path`: the path, the system's reason, what to do."""
    hint = _HINTS.get(error.errno, "choose another path")
    return f"{shorten(path)}: cannot write ({error.strerror or error}); {hint}"


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


def _fsync_file(path: Path) -> None:
    with open(path, "rb") as file:
        os.fsync(file.fileno())


def append_text(path: Path, text: str) -> None:
    """Append `text` (whole lines) to `path`, a regular file or none yet: a failed write (a full disk) is cut back
    to where the file ended, so no half line is left for a reader to meet, and is one WriteError line."""
    path = Path(path)
    check_destination(path)
    size = path.stat().st_size if path.exists() else 0
    try:
        with open(path, "a", encoding="utf-8") as file:
            file.write(text)
    except OSError as error:
        with contextlib.suppress(OSError):
            os.truncate(path, size)
        raise WriteError(write_problem(path, error)) from None


@contextlib.contextmanager
def replacing(path: Path):
    """Yields a temporary path beside `path` (same folder, same suffix, so libraries that choose the format by the
    suffix still do) for the caller or a library to write; when the block succeeds it is fsynced and renamed over
    `path`, and the folder fsynced. The destination is checked before anything is written; on any failure the
    temporary file is removed and `path` is untouched. An OSError of the block or of the rename is a WriteError."""
    path = Path(path)
    check_destination(path)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}{path.suffix}")
    try:
        yield tmp
        _fsync_file(tmp)
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except OSError as error:
        raise WriteError(write_problem(path, error)) from None
    finally:
        if os.path.lexists(tmp):  # only still there if writing failed (False where the folder is missing)
            os.unlink(tmp)


def replace_file(path: Path, data: bytes) -> None:
    """Atomically put `data` at `path` (created or replaced): temporary file in the same folder, fsync, rename,
    fsync the folder. On any failure the temporary file is removed and `path` is untouched."""
    with replacing(path) as tmp:
        write_file(tmp, data)


def move_file(src: Path, path: Path) -> None:
    """Atomically put a file that a library wrote at `src` (same file system) at `path`: fsync it, rename it over
    `path`, fsync the folder. For writers that take a file name rather than bytes (model exporters)."""
    check_destination(path)
    try:
        _fsync_file(src)
        os.replace(src, path)
        fsync_dir(Path(path).parent)
    except OSError as error:
        raise WriteError(write_problem(path, error)) from None
