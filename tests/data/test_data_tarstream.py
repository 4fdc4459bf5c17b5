"""The bounded tar reader of shards: what it reads, and what it refuses before allocating."""

import io
import subprocess
import tarfile

import pytest

from ganforge.data import tarstream


def _tar(members: dict[str, bytes], **options) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", **options) as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


class _Trickle(io.BytesIO):
    """A stream that hands out at most 7 bytes a read, as a slow socket does."""

    def read(self, size=-1):
        return super().read(min(size, 7) if size >= 0 else 7)


def test_reads_what_tarfile_and_our_writer_write(tmp_path):
    members = {"00000000.png": b"\x89PNG" * 100, "00000000.json": b'{"class": "a"}', "dir/00000001.png": b""}
    for options in ({}, {"format": tarfile.USTAR_FORMAT}, {"format": tarfile.GNU_FORMAT}):
        got = list(tarstream.members(_Trickle(_tar(members, **options)), cap=1000))
        assert got == list(members.items()), options
    writer = tarstream.TarWriter(tmp_path / "ours.tar")
    for name, data in members.items():
        writer.add(name, data)
    writer.close()
    with open(tmp_path / "ours.tar", "rb") as file:
        assert list(tarstream.members(file, cap=1000)) == list(members.items())
    with tarfile.open(tmp_path / "ours.tar") as tar:  # and the standard reader reads ours
        assert [(m.name, m.mtime, m.uid, m.mode) for m in tar.getmembers()][0] == ("00000000.png", 0, 0, 0o644)


def test_reads_gnu_tar_output(tmp_path):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "00000000.png").write_bytes(b"x" * 600)
    try:
        subprocess.run(["tar", "-cf", str(tmp_path / "gnu.tar"), "-C", str(tmp_path / "in"), "."], check=True)
    except FileNotFoundError:
        pytest.skip("no tar command on this machine")
    with open(tmp_path / "gnu.tar", "rb") as file:
        assert list(tarstream.members(file, cap=1000)) == [("./00000000.png", b"x" * 600)]


def _header(name=b"a.png", size=b"00000000012", kind=b"0", magic=b"ustar\x0000", checksum=None) -> bytes:
    block = bytearray(512)
    block[: len(name)] = name
    block[124 : 124 + len(size)] = size
    block[156:157] = kind
    block[257 : 257 + len(magic)] = magic
    block[148:156] = b" " * 8
    value = sum(block) if checksum is None else checksum
    block[148:156] = f"{value:06o}\0 ".encode()
    return bytes(block)


class _Guarded(io.BytesIO):
    """Fails the test if more than `limit` bytes are asked for in one read."""

    def __init__(self, data: bytes, limit: int):
        super().__init__(data)
        self.limit = limit

    def read(self, size=-1):
        assert 0 <= size <= self.limit, f"asked for {size} bytes"
        return super().read(size)


@pytest.mark.parametrize(
    "data, reason",
    [
        (_header(size=b"77777777777") + b"x" * 512, "more than the 100"),  # 8 GiB declared: refused before reading
        (_header(size=b"\x80" + b"\0" * 10 + b"\x01"), "octal"),  # base-256 size
        (_header(kind=b"x") + bytes(512), "tar type b'x'"),  # a pax extension header
        (_header(kind=b"L") + bytes(512), "tar type b'L'"),  # a GNU long name
        (_header(kind=b"2") + bytes(512), "tar type b'2'"),  # a symbolic link
        (_header(checksum=1) + bytes(1024), "checksum"),
        (_header(magic=b"nope!\0") + bytes(1024), "ustar"),
        (_header() + b"x" * 5, "cut short"),  # a member's data missing
        (_header() + b"x" * 512, "cut short"),  # no end-of-archive block
        (b"\x89PNG" + bytes(508), "checksum"),  # not a tar at all
        (_header(name=b"\xff\xfe.png") + bytes(1024), "UTF-8"),
    ],
)
def test_refuses_with_a_reason_and_bounded_reads(data, reason):
    with pytest.raises(tarstream.BadShard, match=reason.replace("(", r"\(").replace("[", r"\[")):
        list(tarstream.members(_Guarded(data, limit=512), cap=100))
