"""(e) A write that fails part-way (as on a full disk) leaves the previous checkpoint loadable and reports."""

import errno

import pytest
from checkpoint_helpers import assert_same, make_state

from ganforge import checkpoint
from ganforge.checkpoint import store


def _disk_fills_after(monkeypatch, good_writes: int) -> None:
    real_write = store.write_file
    calls = []

    def write_then_fill(path, data):
        calls.append(path.name)
        if len(calls) > good_writes:
            real_write(path, data[: len(data) // 3])  # a partial file, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real_write(path, data)

    monkeypatch.setattr(store, "write_file", write_then_fill)


@pytest.mark.parametrize("good_writes", [0, 1, 2])  # fails on the tensors, the state, the manifest
def test_failed_write_keeps_previous_and_raises_for_the_loop(tmp_path, monkeypatch, good_writes):
    previous = make_state(1000)
    checkpoint.save(tmp_path, previous, tag="1000", retention=checkpoint.Retention(keep_last=1))
    _disk_fills_after(monkeypatch, good_writes)
    with pytest.raises(checkpoint.CheckpointWriteError, match="ckpt-000002000: writing failed.*No space left") as info:
        checkpoint.save(tmp_path, make_state(2000), tag="2000", retention=checkpoint.Retention(keep_last=1))
    assert "previous checkpoints" in str(info.value) and "rerun the same command" in str(info.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt-000001000", "latest"]  # no temporary folder left
    assert (tmp_path / "latest").read_text().strip() == "ckpt-000001000"
    assert_same(previous, checkpoint.load_latest(tmp_path, check_state=False))


def test_failed_rename_keeps_previous(tmp_path, monkeypatch):
    previous = make_state(1000)
    checkpoint.save(tmp_path, previous, tag="1000", retention=checkpoint.Retention(keep_last=1))

    def no_rename(src, dst):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(store.os, "rename", no_rename)
    with pytest.raises(checkpoint.CheckpointWriteError, match="Input/output error"):
        checkpoint.save(tmp_path, make_state(2000), tag="2000", retention=checkpoint.Retention(keep_last=1))
    monkeypatch.undo()
    assert [p.name for p in checkpoint.list_checkpoints(tmp_path)] == ["ckpt-000001000"]
    assert_same(previous, checkpoint.load_latest(tmp_path, check_state=False))


def test_leftover_of_a_killed_write_is_ignored_then_cleaned(tmp_path):
    checkpoint.save(tmp_path, make_state(1000), tag="1000", retention=checkpoint.Retention())
    leftover = tmp_path / ".tmp-ckpt-000002000"
    leftover.mkdir()
    (leftover / "tensors.safetensors").write_bytes(b"half")
    assert checkpoint.load_latest(tmp_path, check_state=False)["loop"]["cur_nimg"] == 1000
    checkpoint.save(tmp_path, make_state(2000), tag="2000", retention=checkpoint.Retention())
    assert not leftover.exists()
    assert checkpoint.load_latest(tmp_path, check_state=False)["loop"]["cur_nimg"] == 2000


def test_a_file_or_link_under_a_temporary_name_does_not_block_the_next_write(tmp_path):
    """The writer's temporary names are its own: a file or a link under one would make every later write fail."""
    (tmp_path / ".tmp-ckpt-000001000").write_bytes(b"not a folder")
    (tmp_path / ".trash-ckpt-000001000").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "elsewhere").mkdir()
    checkpoint.save(tmp_path, make_state(1000), tag="1000", retention=checkpoint.Retention())
    assert checkpoint.load_latest(tmp_path, check_state=False)["loop"]["cur_nimg"] == 1000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt-000001000", "elsewhere", "latest"]
