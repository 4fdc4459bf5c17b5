import os
import re
import socket
import stat
import subprocess
import sys

import pytest

from ganforge import durable


def test_replace_file_creates_and_replaces_without_leaving_temporaries(tmp_path):
    target = tmp_path / "stats.npz"
    durable.replace_file(target, b"first")
    durable.replace_file(target, b"second")
    assert target.read_bytes() == b"second"
    assert [p.name for p in tmp_path.iterdir()] == ["stats.npz"]


def test_a_failed_write_keeps_the_old_file_and_removes_the_temporary(tmp_path, monkeypatch):
    target = tmp_path / "snapshot.safetensors"
    durable.replace_file(target, b"old")

    def disk_full(path, data):
        path.write_bytes(data[:2])  # a partial temporary file, as a full disk leaves it
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(durable, "write_file", disk_full)
    with pytest.raises(durable.WriteError, match=f"^{target}: cannot write .No space left on device.; free some"):
        durable.replace_file(target, b"new contents")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["snapshot.safetensors"]


def test_write_file_refuses_to_overwrite(tmp_path):
    (tmp_path / "manifest.json").write_bytes(b"{}")
    with pytest.raises(FileExistsError):
        durable.write_file(tmp_path / "manifest.json", b"[]")


def _special_files(folder):
    """Each kind of destination that is not a regular file, made in `folder`: {name: (path, kind in the message)}."""
    made = {}
    os.mkfifo(folder / "fifo")
    made["fifo"] = "FIFO"
    (folder / "dir").mkdir()
    made["dir"] = "folder"
    (folder / "real.html").write_text("kept")
    (folder / "link").symlink_to(folder / "real.html")
    made["link"] = f"symbolic link (to {folder / 'real.html'})"
    (folder / "dangling").symlink_to(folder / "missing.html")
    made["dangling"] = "symbolic link"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(folder / "sock"))
    made["sock"] = "socket"
    if os.geteuid() == 0:  # a device node of its own (1, 3 is /dev/null's): no real device is ever at risk
        os.mknod(folder / "null", stat.S_IFCHR | 0o600, os.makedev(1, 3))
        made["null"] = "character device"
    return made, server


def test_a_destination_that_is_not_a_regular_file_is_refused_and_left_as_it_was(tmp_path):
    made, server = _special_files(tmp_path)
    try:
        before = {name: os.lstat(tmp_path / name) for name in made}
        for name, kind in made.items():
            for write in (lambda p: durable.replace_file(p, b"page"), lambda p: durable.move_file(_source(p), p)):
                expected = f"^{re.escape(str(tmp_path / name))}: is a {re.escape(kind)}"
                with pytest.raises(durable.WriteError, match=expected):
                    write(tmp_path / name)
                after = os.lstat(tmp_path / name)
                assert (after.st_mode, after.st_ino) == (before[name].st_mode, before[name].st_ino), name
        assert (tmp_path / "real.html").read_text() == "kept"
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*made, "real.html", "sources"])
    finally:
        server.close()


def _source(path):
    folder = path.parent / "sources"
    folder.mkdir(exist_ok=True)
    (folder / "model.onnx").write_bytes(b"model")
    return folder / "model.onnx"


def test_with_replacing_a_library_writes_beside_the_destination_with_its_suffix(tmp_path):
    with durable.replacing(tmp_path / "interp.webp") as tmp:
        assert tmp.parent == tmp_path and tmp.suffix == ".webp"
        tmp.write_bytes(b"frames")
    assert (tmp_path / "interp.webp").read_bytes() == b"frames"
    with pytest.raises(ValueError, match="encoder failed"), durable.replacing(tmp_path / "interp.webp") as tmp:
        tmp.write_bytes(b"half")
        raise ValueError("encoder failed")
    assert [p.name for p in tmp_path.iterdir()] == ["interp.webp"]


def test_a_folder_that_is_a_file_or_missing_is_one_message(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(durable.WriteError, match="file/out.png: cannot write .*a part of the path is a file"):
        durable.replace_file(tmp_path / "file" / "out.png", b"png")
    with pytest.raises(durable.WriteError, match="missing/out.png: cannot write .*its folder does not exist"):
        durable.replace_file(tmp_path / "missing" / "out.png", b"png")
    assert [p.name for p in tmp_path.iterdir()] == ["file"]


FULL_DISK = """
import resource, signal, sys
from ganforge import durable
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit then fail with EFBIG, as on a full disk
resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))
try:
    durable.replace_file(sys.argv[1], b"x" * 5000)
except durable.WriteError as error:
    print(error)
"""


def test_a_real_full_disk_leaves_the_old_file_and_no_temporary(tmp_path):
    """The file-size limit stands in for a full disk: the same failed write() reaches the same code."""
    target = tmp_path / "report.html"
    target.write_bytes(b"old")
    result = subprocess.run([sys.executable, "-c", FULL_DISK, str(target)], capture_output=True, text=True)
    assert result.stdout.startswith(f"{target}: cannot write (File too large); "), result.stdout + result.stderr
    assert target.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["report.html"]
