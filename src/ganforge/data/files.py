"""Bounded reading of the files a dataset is made of: zip members and folder files, and the JSON beside them.

Every read has a cap in bytes, derived by the caller from what the file may legitimately hold (an image of the
dataset's resolution, a label per image), and compared with the size the zip directory or the file system declares
before a byte is read; no read ever returns more than the cap. This matters for zips: a deflated member inflates up
to a thousandfold, so a 1.5 MB zip can declare a 1.5 GiB image. Only stored and deflated members are read (bzip2 and
LZMA inflate a whole block per call, with no bound on the output, and no image zip needs them), and a zip whose
members share or overlap their data (how zip bombs reuse one compressed kernel for many files) is refused whole.

A file that cannot be read raises `images.BadImage(reason)`, as an undecodable one does: to `dataset build` it is
one bad file among many; a zip or JSON file that cannot be read at all raises UserError naming it.
"""

import json
import os
import stat
import zipfile
import zlib
from pathlib import Path

from ganforge.data.images import BadImage, brief
from ganforge.errors import UserError

# What zipfile raises for a damaged directory or member: bad CRC or header (BadZipFile), a truncated file (EOFError,
# OSError), corrupt deflate data (zlib.error), a name that does not decode or an impossible offset (ValueError), a
# version or feature it does not implement (NotImplementedError).
_ZIP_ERRORS = (zipfile.BadZipFile, OSError, EOFError, zlib.error, ValueError, NotImplementedError)
_READABLE_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
_UNSUPPORTED_FLAGS = 0x1 | 0x20 | 0x40  # encrypted, compressed patched data, strong encryption
_LOCAL_HEADER_BYTES = 30  # the fixed part of a member's local header, before its name and extra field


def read_file(path: Path, cap: int) -> bytes:
    """The bytes of a regular file of at most `cap` bytes; BadImage otherwise (never blocks on a FIFO or a device)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as file:
            info = os.fstat(file.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise BadImage("not a regular file")
            if info.st_size > cap:
                raise BadImage(f"{info.st_size} bytes, more than the {cap} such a file may take")
            data = file.read(cap + 1)
    except OSError as error:
        raise BadImage(f"unreadable: {brief(error.strerror or error)}") from None
    if len(data) > cap:  # it grew since fstat
        raise BadImage(f"more than the {cap} bytes such a file may take")
    return data


def parse_json(data: bytes, where: str):
    """JSON from a file: UserError naming `where` when it is not JSON or is nested past the interpreter's depth."""
    try:
        return json.loads(data)
    except RecursionError:
        raise UserError(f"{where}: JSON nested too deeply to read; rebuild it") from None
    except ValueError as error:  # JSONDecodeError, UnicodeDecodeError, an integer of too many digits
        raise UserError(f"{where}: not valid JSON ({brief(error, 100)}); rebuild it") from None


class ZipMembers:
    """The members of a zip, read with caps. The ZipFile is opened lazily in each process, never inherited or
    pickled: a forked DataLoader worker sharing the parent's file offset would read garbage."""

    def __init__(self, path: Path):
        self.path, self._zip, self._pid = path, None, None
        archive = self._open()
        infos = archive.infolist()
        _check_layout(path, infos, archive.start_dir)
        # Not ZipInfo.is_dir(): it fails on an empty name, which a damaged directory can hold.
        self._infos = {info.filename: info for info in infos if not info.filename.endswith("/")}
        self.names = sorted(self._infos)

    def _open(self) -> zipfile.ZipFile:
        if self._pid != os.getpid():  # first use in this process (e.g. a freshly forked DataLoader worker)
            try:
                self._zip, self._pid = zipfile.ZipFile(self.path), os.getpid()
            except _ZIP_ERRORS as error:
                raise UserError(f"{self.path}: not a readable zip ({brief(error, 100)}); rebuild it") from None
        return self._zip

    def infos(self) -> list[zipfile.ZipInfo]:
        return [self._infos[name] for name in self.names]

    def problem(self, name: str, cap: int) -> str | None:
        """What the zip directory tells is wrong with member `name` before reading it (None: it may be read)."""
        info = self._infos[name]
        if info.flag_bits & _UNSUPPORTED_FLAGS:
            return "encrypted or patched zip member; re-create the zip without a password"
        if info.compress_type not in _READABLE_METHODS:
            return f"compressed with zip method {info.compress_type}; ganforge reads stored or deflated members"
        if info.file_size > cap:
            return f"{info.file_size} bytes once inflated, more than the {cap} such a file may take"
        return None

    def read(self, name: str, cap: int) -> bytes:
        """Member `name` (at most `cap` bytes once inflated); BadImage naming what is wrong with it."""
        problem = self.problem(name, cap)
        if problem:
            raise BadImage(problem)
        info = self._infos[name]
        try:
            with self._open().open(info) as member:
                data = member.read(cap + 1)  # zipfile also stops at the declared size
        except _ZIP_ERRORS as error:
            raise BadImage(f"unreadable: {type(error).__name__}: {brief(error, 100)}") from None
        if len(data) > cap:
            raise BadImage(f"more than the {cap} bytes such a file may take")
        return data

    def __getstate__(self):
        return {**self.__dict__, "_zip": None, "_pid": None}

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()


def _check_layout(path: Path, infos: list[zipfile.ZipInfo], directory_start: int) -> None:
    """Refuse repeated member names, and members whose data overlap the next member or the directory: every byte of
    a zip belongs to one member, so reading all members inflates each compressed byte once."""
    if len({info.filename for info in infos}) != len(infos):
        raise UserError(f"{path}: a member name occurs twice in the zip; re-create the zip")
    ordered = sorted(infos, key=lambda info: info.header_offset)
    ends = [info.header_offset + _LOCAL_HEADER_BYTES + info.compress_size for info in ordered]
    starts = [info.header_offset for info in ordered[1:]] + [directory_start]
    if any(end > start for end, start in zip(ends, starts, strict=True)):
        raise UserError(f"{path}: zip members overlap (a zip bomb, or a damaged zip); re-create the zip")
