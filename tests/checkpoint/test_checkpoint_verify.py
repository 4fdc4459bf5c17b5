"""(d) A truncated, a bit-flipped and a manifest-less checkpoint are each skipped with a warning that names it."""

import json

import pytest
from checkpoint_helpers import assert_same, make_state

from ganforge import checkpoint
from ganforge.errors import UserError


def _two_checkpoints(tmp_path):
    keep = checkpoint.Retention(keep_last=10)
    good = make_state(1000)
    checkpoint.save(tmp_path, good, tag="1000", retention=keep)
    bad = checkpoint.save(tmp_path, make_state(2000), tag="2000", retention=keep)
    return good, bad


def _truncate(path):
    data = (path / "tensors.safetensors").read_bytes()
    (path / "tensors.safetensors").write_bytes(data[: len(data) // 2])


def _flip_a_bit(path):
    data = bytearray((path / "tensors.safetensors").read_bytes())
    data[len(data) - 7] ^= 0x10  # inside the tensor payload: still a parseable file, only the hash can tell
    (path / "tensors.safetensors").write_bytes(bytes(data))


def _flip_a_bit_in_state(path):
    data = bytearray((path / "state.json").read_bytes())
    data[data.index(b'"cur_tick": 3') + len('"cur_tick": ')] = ord("4")
    (path / "state.json").write_bytes(bytes(data))


def _drop_manifest(path):
    (path / "manifest.json").unlink()


def _future_format(path):
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["format_version"] = 99
    (path / "manifest.json").write_text(json.dumps(manifest))


def _drop_file(path):
    (path / "state.json").unlink()


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (_truncate, "tensors.safetensors has .* bytes, the manifest says .* \\(truncated\\?\\)"),
        (_flip_a_bit, "tensors.safetensors does not match its SHA-256 .*corrupted"),
        (_flip_a_bit_in_state, "state.json does not match its SHA-256 .*corrupted"),
        (_drop_manifest, "no manifest.json"),
        (_future_format, "format version 99 is newer"),
        (_drop_file, "state.json is missing"),
    ],
)
def test_damaged_newest_is_skipped_with_named_warning_and_previous_used(tmp_path, damage, why):
    good, bad = _two_checkpoints(tmp_path)
    damage(bad)
    with pytest.warns(checkpoint.CheckpointWarning, match=f"skipping checkpoint .*ckpt-000002000: {why}"):
        loaded = checkpoint.load_latest(tmp_path, check_state=False)
    assert_same(good, loaded)
    with pytest.raises(UserError, match=f"ckpt-000002000: {why}"):
        checkpoint.load(bad, check_state=False)


def test_find_latest_names_the_folder_it_used(tmp_path):
    _, bad = _two_checkpoints(tmp_path)
    _drop_manifest(bad)
    with pytest.warns(checkpoint.CheckpointWarning):
        path, state = checkpoint.find_latest(tmp_path, check_state=False)
    assert path.name == "ckpt-000001000" and state["loop"]["cur_nimg"] == 1000


def test_none_valid_gives_none_with_a_warning_for_each(tmp_path):
    first, second = (tmp_path / "ckpt-000001000"), (tmp_path / "ckpt-000002000")
    _two_checkpoints(tmp_path)
    _truncate(first)
    _drop_manifest(second)
    with pytest.warns(checkpoint.CheckpointWarning) as record:
        assert checkpoint.load_latest(tmp_path, check_state=False) is None
    messages = [str(w.message) for w in record]
    assert len(messages) == 2
    assert "ckpt-000002000: no manifest.json" in messages[0]
    assert "ckpt-000001000: tensors.safetensors has" in messages[1]


def test_load_of_something_that_is_not_a_checkpoint_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="not a checkpoint folder"):
        checkpoint.load(tmp_path / "missing", check_state=False)
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserError, match="empty: no manifest.json"):
        checkpoint.load(tmp_path / "empty", check_state=False)
