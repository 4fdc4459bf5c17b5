"""Tar shards read as a stream, with every allocation bounded: the members of a shard in order, one at a time.

Python's `tarfile` (and webdataset's reader, built on it) reads pax and GNU long-name headers whole, at whatever size
the header declares, and a stream cannot be checked against its length first: a small hostile header followed by
gigabytes of data would be buffered in memory. This reader takes the plain ustar subset that `dataset build --format
shards` writes (and that `tar`, `tarfile` and webdataset write for short names): regular files and directories,
names of up to 255 bytes, and refuses extension headers, links and devices with a clear reason. Each member's size
is compared with the caller's cap before its bytes are read.

Writing uses `tarfile` in ustar format with fixed owners and times, so equal inputs give byte-identical shards.
"""

import io
import tarfile

BLOCK = 512
_ZERO = bytes(BLOCK)
_REGULAR, _DIRECTORY = (b"0", b"\0"), b"5"


class BadShard(ValueError):
    """The stream is not a tar shard this reader takes; the message says why (no file name: the caller adds it)."""


def _read_exact(stream, size: int) -> bytes:
    """Exactly `size` bytes, reading as often as a network stream needs; BadShard when the stream ends first."""
    chunks, missing = [], size
    while missing:
        chunk = stream.read(missing)
        if not chunk:
            raise BadShard("cut short: the stream ends inside a member")
        chunks.append(chunk)
        missing -= len(chunk)
    return b"".join(chunks)


def _octal(field: bytes, what: str) -> int:
    text = field.rstrip(b"\0 ").lstrip(b" ")
    if not text or any(c not in b"01234567" for c in text):
        raise BadShard(f"a header's {what} is not an octal number (base-256 sizes are not read)")
    return int(text, 8)


def _header(block: bytes) -> tuple[str, bytes, int]:
    """(name, type flag, size) of a 512-byte ustar header, after checking its checksum and magic."""
    stored = _octal(block[148:156], "checksum")
    if stored != sum(block[:148]) + 8 * 32 + sum(block[156:]):
        raise BadShard("a header's checksum does not match (damaged, or not a tar file)")
    if block[257:263] not in (b"ustar\x00", b"ustar "):
        raise BadShard("a header is not in ustar format")
    prefix, name = block[345:500].split(b"\0")[0], block[:100].split(b"\0")[0]
    full = prefix + b"/" + name if prefix else name
    try:
        return full.decode("utf-8"), block[156:157], _octal(block[124:136], "size")
    except UnicodeDecodeError:
        raise BadShard("a member name is not UTF-8") from None


def members(stream, cap: int):
    """Yield (name, bytes) for each regular file of the tar `stream` in order, each of at most `cap` bytes; BadShard
    when the stream is not a complete tar of the subset described above."""
    while True:
        block = _read_exact(stream, BLOCK)
        if block == _ZERO:
            return
        name, kind, size = _header(block)
        if kind == _DIRECTORY and size == 0:
            continue
        if kind not in _REGULAR:
            raise BadShard(
                f"member {name[:80]!r} is of tar type {kind!r} (an extension header, link or device); shards hold "
                "plain files only"
            )
        if size > cap:
            raise BadShard(f"member {name[:80]!r} holds {size} bytes, more than the {cap} a sample may take")
        data = _read_exact(stream, size)
        _read_exact(stream, -size % BLOCK)
        yield name, data


class TarWriter:
    """A tar file of plain members with fixed metadata (mode 0644, owner 0, time 0), in ustar format."""

    def __init__(self, path):
        self._tar = tarfile.open(path, "x", format=tarfile.USTAR_FORMAT)  # noqa: SIM115 (closed by close())

    def add(self, name: str, data: bytes) -> None:
        info = tarfile.TarInfo(name)
        info.size, info.mode, info.mtime = len(data), 0o644, 0
        self._tar.addfile(info, io.BytesIO(data))

    def close(self) -> None:
        self._tar.close()
