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
    with pytest.raises(OSError, match="No space left"):
        durable.replace_file(target, b"new contents")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["snapshot.safetensors"]


def test_write_file_refuses_to_overwrite(tmp_path):
    (tmp_path / "manifest.json").write_bytes(b"{}")
    with pytest.raises(FileExistsError):
        durable.write_file(tmp_path / "manifest.json", b"[]")
