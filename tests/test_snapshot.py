"""Snapshot files: round trip, atomic write, and a clear UserError for every kind of bad file."""

import json

import pytest
import safetensors.torch
import torch

from ganforge.errors import UserError
from ganforge.nets import Discriminator, Generator, StyleGAN3Generator, input_transform
from ganforge.snapshot import load_discriminator, load_snapshot, save_discriminator, save_snapshot

ARCH = dict(resolution=8, z_dim=8, w_dim=8, channel_base=64, channel_max=8, mapping_layers=2, c_dim=2)


@pytest.fixture
def G():
    torch.manual_seed(0)
    G = Generator(**ARCH)
    G.mapping(torch.randn(4, 8), torch.eye(2)[[0, 1, 0, 1]], update_w_avg=True)  # non-zero w_avg buffer
    return G


def test_round_trip_restores_weights_buffers_config_and_meta(G, tmp_path):
    path = tmp_path / "snap.safetensors"
    save_snapshot(path, G, {"kimg": 12.5, "dataset": "toy"})
    loaded, meta = load_snapshot(path)
    assert meta == {"kimg": 12.5, "dataset": "toy"}
    assert not loaded.training and loaded.config == G.config
    expected = G.state_dict()
    assert loaded.state_dict().keys() == expected.keys()
    for k, v in loaded.state_dict().items():
        assert torch.equal(v, expected[k]), k
    z, c = torch.randn(2, 8), torch.eye(2)
    assert torch.equal(loaded(z, c, noise_mode="const"), G.eval()(z, c, noise_mode="const"))
    assert [p.name for p in tmp_path.iterdir()] == ["snap.safetensors"]  # no temporary file left behind


def test_save_replaces_an_existing_snapshot(G, tmp_path):
    path = tmp_path / "snap.safetensors"
    save_snapshot(path, G, {"kimg": 1})
    save_snapshot(path, G, {"kimg": 2})
    assert load_snapshot(path)[1] == {"kimg": 2}


def test_missing_file(tmp_path):
    with pytest.raises(UserError, match="no such snapshot file"):
        load_snapshot(tmp_path / "nope.safetensors")
    with pytest.raises(UserError, match="no such snapshot file"):
        load_snapshot(tmp_path)  # a folder is not a snapshot


def test_not_a_safetensors_file(tmp_path):
    path = tmp_path / "network.pkl"
    path.write_bytes(b"\x80\x04\x95 this is a pickle, never to be loaded")
    with pytest.raises(UserError, match="not a readable safetensors file"):
        load_snapshot(path)


def test_truncated_file(G, tmp_path):
    path = tmp_path / "snap.safetensors"
    save_snapshot(path, G, {})
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(UserError, match="truncated or corrupt"):
        load_snapshot(path)


def test_flipped_tensor_bytes_fail_the_checksum(G, tmp_path):
    path = tmp_path / "snap.safetensors"
    save_snapshot(path, G, {})
    data = bytearray(path.read_bytes())
    data[-5] ^= 0x10  # inside the last tensor's data; the header still parses
    path.write_bytes(bytes(data))
    with pytest.raises(UserError, match="checksum"):
        load_snapshot(path)


def test_safetensors_without_snapshot_metadata(tmp_path):
    path = tmp_path / "weights.safetensors"
    safetensors.torch.save_file({"x": torch.zeros(2)}, path)
    with pytest.raises(UserError, match="not a ganforge snapshot"):
        load_snapshot(path)


def rewrite(path, G, **metadata):
    """A snapshot file with some metadata fields replaced."""
    meta = {"format": "ganforge-snapshot", "format_version": "1", "generator": json.dumps(G.config), "meta": "{}"}
    safetensors.torch.save_file(G.state_dict(), path, metadata={**meta, **metadata})


def test_wrong_format_version(G, tmp_path):
    rewrite(tmp_path / "s.safetensors", G, format_version="2")
    with pytest.raises(UserError, match="format version '2'"):
        load_snapshot(tmp_path / "s.safetensors")


def test_corrupt_metadata(G, tmp_path):
    rewrite(tmp_path / "s.safetensors", G, generator="{resolution: 8")
    with pytest.raises(UserError, match="metadata is corrupt"):
        load_snapshot(tmp_path / "s.safetensors")


def test_architecture_mismatch_lists_every_problem(G, tmp_path):
    rewrite(tmp_path / "s.safetensors", G, generator=json.dumps({**G.config, "resolution": 16}))
    with pytest.raises(UserError, match="architecture mismatch") as err:
        load_snapshot(tmp_path / "s.safetensors")
    assert any("missing tensor synthesis.b16.conv0.weight" in p for p in err.value.problems)
    rewrite(tmp_path / "s.safetensors", G, generator=json.dumps({**G.config, "w_dim": 16}))
    with pytest.raises(UserError, match=r"mapping.fc1.weight has shape \[8, 8\]"):
        load_snapshot(tmp_path / "s.safetensors")


def test_unknown_or_invalid_architecture(G, tmp_path):
    rewrite(tmp_path / "s.safetensors", G, generator=json.dumps({**G.config, "style_dim": 3}))
    with pytest.raises(UserError, match="architecture mismatch.*style_dim"):
        load_snapshot(tmp_path / "s.safetensors")
    rewrite(tmp_path / "s.safetensors", G, generator=json.dumps({**G.config, "resolution": 12}))
    with pytest.raises(UserError, match="architecture mismatch, generator resolution: 12"):
        load_snapshot(tmp_path / "s.safetensors")


def test_discriminator_file_round_trip_and_kinds_are_told_apart(G, tmp_path):
    torch.manual_seed(1)
    D = Discriminator(**{**ARCH, "mbstd_group_size": 2})
    save_discriminator(tmp_path / "D.safetensors", D, {"imported_from": "x.pkl"})
    loaded, meta = load_discriminator(tmp_path / "D.safetensors")
    assert meta == {"imported_from": "x.pkl"} and loaded.config == D.config and not loaded.training
    img, c = torch.randn(2, 3, 8, 8), torch.eye(2)
    assert torch.equal(loaded(img, c), D(img, c))
    with pytest.raises(UserError, match="a ganforge discriminator file but not a ganforge snapshot file"):
        load_snapshot(tmp_path / "D.safetensors")
    save_snapshot(tmp_path / "G.safetensors", G, {})
    with pytest.raises(UserError, match="a ganforge snapshot file but not a ganforge discriminator file"):
        load_discriminator(tmp_path / "G.safetensors")


def test_stylegan3_round_trip_records_the_architecture(tmp_path):
    torch.manual_seed(0)
    G3 = StyleGAN3Generator(resolution=16, z_dim=8, w_dim=8, channel_base=128, channel_max=8, config="r")
    ws = G3.mapping(torch.randn(2, 8), torch.zeros(2, 0))
    G3.synthesis(ws, magnitude_ema_beta=0.5)  # magnitude_ema buffers away from their initial 1
    path = tmp_path / "sg3.safetensors"
    save_snapshot(path, G3, {})
    with safetensors.safe_open(path, framework="pt") as f:
        assert f.metadata()["architecture"] == "stylegan3"
    loaded, _ = load_snapshot(path)
    assert type(loaded) is StyleGAN3Generator and loaded.config == G3.config
    move = input_transform(translate=(0.1, 0), angle=0.2)
    torch.testing.assert_close(loaded.synthesis(ws, transform=move), G3.eval().synthesis(ws, transform=move))


def test_snapshot_without_architecture_is_stylegan2_and_unknown_ones_are_refused(G, tmp_path):
    rewrite(tmp_path / "old.safetensors", G)  # as written before the field existed
    assert type(load_snapshot(tmp_path / "old.safetensors")[0]) is Generator
    rewrite(tmp_path / "new.safetensors", G, architecture="stylegan9")
    with pytest.raises(UserError, match="unknown generator architecture 'stylegan9'"):
        load_snapshot(tmp_path / "new.safetensors")
