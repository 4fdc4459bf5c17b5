"""(g) A checkpoint carrying a malicious pickle payload is refused, and the payload never runs."""

import hashlib
import json
import pickle

import pytest
import torch
from checkpoint_helpers import make_state

from ganforge import checkpoint
from ganforge.errors import UserError


class _Payload:
    """Unpickling this creates `marker`: proof that something deserialised it."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _checkpoints(tmp_path):
    ckpt_dir = tmp_path / "checkpoints"
    checkpoint.save(ckpt_dir, make_state(1000), tag="1000", retention=checkpoint.Retention(keep_last=5))
    bad = checkpoint.save(ckpt_dir, make_state(2000), tag="2000", retention=checkpoint.Retention(keep_last=5))
    return ckpt_dir, bad


def _rehash(path):
    """What an attacker who also rewrites the manifest would do, so the hashes verify."""
    manifest = json.loads((path / "manifest.json").read_text())
    for name, entry in manifest["files"].items():
        data = (path / name).read_bytes()
        entry.update(sha256=hashlib.sha256(data).hexdigest(), size=len(data))
    (path / "manifest.json").write_text(json.dumps(manifest))


def _extra_pkl(path, payload):
    (path / "extra.pkl").write_bytes(pickle.dumps(payload))


def _extra_pt(path, payload):
    torch.save({"G": payload}, path / "G.pt")


def _replaced_tensors(path, payload):
    (path / "tensors.safetensors").write_bytes(pickle.dumps(payload))
    _rehash(path)


def _replaced_tensors_with_torch_save(path, payload):
    torch.save(payload, path / "tensors.safetensors")
    _rehash(path)


def _replaced_state(path, payload):
    (path / "state.json").write_bytes(pickle.dumps(payload))
    _rehash(path)


def _replaced_manifest(path, payload):
    (path / "manifest.json").write_bytes(pickle.dumps(payload))


@pytest.mark.parametrize(
    ("plant", "why"),
    [
        (_extra_pkl, "files not in the manifest: extra.pkl"),
        (_extra_pt, "files not in the manifest: G.pt"),
        (_replaced_tensors, "tensors.safetensors is not a safetensors file"),
        (_replaced_tensors_with_torch_save, "tensors.safetensors is not a safetensors file"),
        (_replaced_state, "state.json is not a ganforge state document"),
        (_replaced_manifest, "manifest.json is not a valid manifest"),
    ],
)
def test_pickle_payload_is_refused_and_never_runs(tmp_path, plant, why):
    marker = tmp_path / "payload-ran"
    ckpt_dir, bad = _checkpoints(tmp_path)
    plant(bad, _Payload(marker))
    with pytest.warns(checkpoint.CheckpointWarning, match=f"ckpt-000002000: {why}"):
        assert checkpoint.load_latest(ckpt_dir, check_state=False)["loop"]["cur_nimg"] == 1000
    with pytest.raises(UserError, match=why):
        checkpoint.load(bad, check_state=False)
    assert not marker.exists()
    # The payload is real: unpickling it does run it. This is what ganforge never does.
    pickle.loads(pickle.dumps(_Payload(marker)))
    assert marker.exists()


def test_loading_never_touches_pickle_or_torch_load(tmp_path, monkeypatch):
    ckpt_dir, _ = _checkpoints(tmp_path)

    def forbidden(*args, **kwargs):
        raise AssertionError("checkpoint loading must not unpickle anything")

    for module, name in ((pickle, "load"), (pickle, "loads"), (pickle, "Unpickler"), (torch, "load")):
        monkeypatch.setattr(module, name, forbidden)
    assert checkpoint.load_latest(ckpt_dir, check_state=False)["loop"]["cur_nimg"] == 2000
