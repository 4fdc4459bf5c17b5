"""Snapshot files: round trip, atomic write, and a clear UserError for every kind of bad file."""

import json
import struct
import warnings

import pytest
import safetensors.torch
import torch

from ganforge.errors import UserError
from ganforge.nets import Discriminator, Generator, StyleGAN3Generator, input_transform
from ganforge.snapshot import content_sha256, load_discriminator, load_snapshot, save_discriminator, save_snapshot

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


def rewrite(path, G, signed=True, **metadata):
    """A snapshot file with some metadata fields replaced, with a checksum that matches (`signed`) or none."""
    meta = {"format": "ganforge-snapshot", "format_version": "1", "generator": json.dumps(G.config), "meta": "{}"}
    meta |= metadata
    tensors = G.state_dict()
    if signed:
        meta["content_sha256"] = content_sha256(meta, tensors)
    safetensors.torch.save_file(tensors, path, metadata=meta)


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
    with pytest.raises(UserError, match="unsupported architecture, style_dim: not an argument of Generator"):
        load_snapshot(tmp_path / "s.safetensors")
    rewrite(tmp_path / "s.safetensors", G, generator=json.dumps({**G.config, "resolution": 12}))
    with pytest.raises(UserError, match="unsupported architecture, resolution=12: must be a power of two"):
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
    rewrite(tmp_path / "old.safetensors", G)  # as written before the field existed (signed as today)
    assert type(load_snapshot(tmp_path / "old.safetensors")[0]) is Generator
    rewrite(tmp_path / "new.safetensors", G, architecture="stylegan9")
    with pytest.raises(UserError, match="unknown generator architecture 'stylegan9'"):
        load_snapshot(tmp_path / "new.safetensors")


# --- integrity: the checksum covers the metadata; formats from before it are read as what they are ------------------


def signed_parts(path):
    with safetensors.safe_open(path, framework="pt") as f:
        return f.metadata(), {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (safe_open has no iter)


def test_the_checksum_covers_the_metadata(G, tmp_path):
    path = tmp_path / "snap.safetensors"
    save_snapshot(path, G, {"kimg": 1})
    metadata, tensors = signed_parts(path)
    assert metadata["content_sha256"] == content_sha256(metadata, tensors)
    for field, value in (("meta", '{"kimg": 2}'), ("generator", json.dumps({**G.config, "mapping_layers": 3})),
                         ("architecture", "stylegan3"), ("tensors_sha256", "0" * 64)):  # fmt: skip
        safetensors.torch.save_file(tensors, path, metadata={**metadata, field: value})
        with pytest.raises(UserError, match="snapshot content does not match its checksum, the file is corrupt"):
            load_snapshot(path)


def test_a_snapshot_without_a_checksum_is_refused(G, tmp_path):
    path = tmp_path / "snap.safetensors"
    save_snapshot(path, G, {})
    metadata, tensors = signed_parts(path)
    unsigned = {k: v for k, v in metadata.items() if not k.endswith("sha256")}
    safetensors.torch.save_file({k: torch.full_like(v, float("nan")) for k, v in tensors.items()}, path, unsigned)
    with pytest.raises(UserError, match=r"snapshot without a checksum \(content_sha256\).*cannot be verified"):
        load_snapshot(path)


def loaded_with_warnings(load, path) -> tuple[torch.nn.Module, dict, list[str]]:
    """`load(path)`: (network, meta, the text of every warning it gave)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        net, meta = load(path)
    return net, meta, [str(w.message) for w in caught]


def test_snapshots_from_before_the_content_checksum_still_load_with_a_warning(G, tmp_path):
    """As each earlier ganforge wrote them (git history of snapshot.py): no checksum and no architecture (the first
    format); tensors_sha256 without the architecture; tensors_sha256 with it (until content_sha256)."""
    from ganforge.snapshot import tensors_sha256

    tensors = {k: v.contiguous() for k, v in G.state_dict().items()}
    first = {"format": "ganforge-snapshot", "format_version": "1", "generator": json.dumps(G.config), "meta": "{}"}
    second = first | {"tensors_sha256": tensors_sha256(tensors)}
    for i, metadata in enumerate((first, second, second | {"architecture": "stylegan2"})):
        path = tmp_path / f"old{i}.safetensors"
        safetensors.torch.save_file(tensors, path, metadata=metadata)
        loaded, _, shown = loaded_with_warnings(load_snapshot, path)
        assert loaded.config == G.config and shown == (
            [f"{path}: written before snapshots carried a checksum, so its integrity cannot be checked"] if i == 0
            else [UNCOVERED.format(path=path, noun="snapshot")])  # fmt: skip
    flipped = {k: v.clone() for k, v in tensors.items()}
    flipped["mapping.fc0.weight"][0, 0] += 1
    safetensors.torch.save_file(flipped, tmp_path / "old1.safetensors", metadata=second)
    with pytest.raises(UserError, match="does not match its checksum"):
        load_snapshot(tmp_path / "old1.safetensors")
    with_nan = {k: v.clone() for k, v in tensors.items()}
    with_nan["mapping.fc0.weight"][0, 0] = float("nan")  # unverifiable, and damaged
    safetensors.torch.save_file(with_nan, tmp_path / "old0.safetensors", metadata=first)
    damaged = r"damaged weights, 1 tensors hold NaN or infinite values \(mapping.fc0"
    with pytest.raises(UserError, match=damaged), pytest.warns(UserWarning, match="before snapshots carried a"):
        load_snapshot(tmp_path / "old0.safetensors")


UNCOVERED = (
    "{path}: its architecture and meta are not covered by a checksum (tensors_sha256 without content_sha256: a "
    "ganforge {noun} from before content_sha256, or a current one with it removed), so they may have been altered; "
    "for a fully checked file copy the original again or, if it was imported, run `ganforge import` on its source "
    "again"
)


def stripped(path, **changes) -> None:
    """Remove content_sha256 from the file at `path` and change its metadata fields by `changes`: what anyone can do
    to a current file, leaving tensors_sha256 to match."""
    metadata, tensors = signed_parts(path)
    del metadata["content_sha256"]
    safetensors.torch.save_file(tensors, path, metadata=metadata | changes)


def test_a_file_stripped_of_its_content_checksum_warns_that_its_metadata_is_unchecked(G, tmp_path):
    """Such a file cannot be told from the tensors_sha256-only format, which loads: it loads too, with the altered
    architecture and meta, but never silently."""
    path = tmp_path / "snap.safetensors"
    save_snapshot(path, G, {"kimg": 1})
    assert loaded_with_warnings(load_snapshot, path)[2] == []
    stripped(path, generator=json.dumps({**G.config, "conv_clamp": 0.001}), meta='{"kimg": 9000}')
    loaded, meta, shown = loaded_with_warnings(load_snapshot, path)
    assert loaded.config["conv_clamp"] == 0.001 and meta == {"kimg": 9000}
    assert shown == [UNCOVERED.format(path=path, noun="snapshot")]
    D = Discriminator(**{**ARCH, "mbstd_group_size": 2})
    save_discriminator(path, D, {})
    assert loaded_with_warnings(load_discriminator, path)[2] == []
    stripped(path, discriminator=json.dumps({**D.config, "conv_clamp": 0.001}))
    loaded, _, shown = loaded_with_warnings(load_discriminator, path)
    assert loaded.config["conv_clamp"] == 0.001 and shown == [UNCOVERED.format(path=path, noun="discriminator")]


def test_the_unchecked_metadata_warning_is_one_line_of_the_command(G, tmp_path):
    from click.testing import CliRunner

    from ganforge.cli import main

    path = tmp_path / "snap.safetensors"
    save_snapshot(path, G, {})
    stripped(path, meta='{"kimg": 9000}')
    args = ["generate", "--network", str(path), "--seeds", "0", "--class", "0", "--outdir", str(tmp_path / "out")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == ["warning: " + UNCOVERED.format(path=path, noun="snapshot")]


def test_discriminator_files_always_had_a_checksum(tmp_path):
    D = Discriminator(**{**ARCH, "mbstd_group_size": 2})
    save_discriminator(tmp_path / "D.safetensors", D, {})
    metadata, tensors = signed_parts(tmp_path / "D.safetensors")
    unsigned = {k: v for k, v in metadata.items() if not k.endswith("sha256") and k != "architecture"}
    safetensors.torch.save_file(tensors, tmp_path / "D.safetensors", metadata=unsigned)
    with pytest.raises(UserError, match="discriminator without a checksum"):
        load_discriminator(tmp_path / "D.safetensors")


# --- bounded work: the architecture is checked before anything is built -------------------------------------------


def test_architectures_beyond_the_limits_are_refused(G, tmp_path):
    path = tmp_path / "s.safetensors"
    rewrite(path, G, generator=json.dumps({**G.config, "mapping_layers": 10**7, "channel_max": 4096, "z_dim": True}))
    with pytest.raises(UserError) as err:
        load_snapshot(path)
    assert err.value.problems == [
        f"{path}: unsupported architecture, z_dim=True: must be an integer from 1 to 2048",
        f"{path}: unsupported architecture, channel_max=4096: must be an integer from 1 to 1024",
        f"{path}: unsupported architecture, mapping_layers=10000000: must be an integer from 1 to 32",
    ]
    rewrite(path, G, generator=json.dumps({**G.config, "conv_clamp": float("nan")}))
    with pytest.raises(UserError, match="conv_clamp=nan: must be a finite number > 0, or null"):
        load_snapshot(path)


def test_the_limits_are_checked_before_anything_is_built(G, tmp_path):
    """Checked first, by arithmetic: not even the meta-device network (which would say "parameters") is made."""
    path = tmp_path / "s.safetensors"
    rewrite(path, G, generator=json.dumps({**G.config, "channel_max": 4096, "channel_base": 2**16}))
    with pytest.raises(UserError, match="unsupported architecture, channel_max=4096: must be an integer from 1 to"):
        load_snapshot(path)


def test_an_architecture_the_file_cannot_hold_is_refused_before_it_is_built(G, tmp_path, monkeypatch):
    path = tmp_path / "s.safetensors"
    big = {**G.config, "resolution": 1024, "channel_max": 1024, "channel_base": 2**20}
    rewrite(path, G, generator=json.dumps(big))
    built = []
    monkeypatch.setattr(Generator, "load_state_dict", lambda *args, **kwargs: built.append(args))
    with pytest.raises(UserError, match=r"its architecture has 163,529,644 parameters, more than a file of "):
        load_snapshot(path)
    assert not built


def test_metadata_is_parsed_within_bounds(G, tmp_path):
    path = tmp_path / "s.safetensors"
    for field, text, problem in (
        ("generator", "[" * 100_000 + "]" * 100_000, "'generator' is nested too deeply"),
        ("meta", "[" * 100 + "]" * 100, "'meta' is nested more than 32 levels deep"),
        ("meta", json.dumps("x" * (1 << 20)), "'meta' is 1048578 characters long"),
    ):
        rewrite(path, G, **{field: text})
        with pytest.raises(UserError, match=f"snapshot metadata is corrupt: {problem}"):
            load_snapshot(path)
    rewrite(path, G, meta="[1]")
    with pytest.raises(UserError, match=r"metadata 'meta' is \[1\], not a JSON object"):
        load_snapshot(path)
    rewrite(path, G, generator=json.dumps({**G.config, "x" * 5000: 1}))
    with pytest.raises(UserError) as err:
        load_snapshot(path)
    message = err.value.problems[0].removeprefix(str(path))  # the path's length is the test folder's, not the file's
    assert len(message) < 160 and "...: not an argument of Generator" in message


def test_more_tensors_than_any_network_has_are_refused_by_their_count(tmp_path):
    """Counted from the header, before any tensor is read or compared with an architecture."""
    header = {"__metadata__": {"format": "ganforge-snapshot"}}
    header |= {f"t{i}": {"dtype": "F32", "shape": [0], "data_offsets": [0, 0]} for i in range(10_001)}  # all empty
    text = json.dumps(header).encode()
    path = tmp_path / "s.safetensors"
    path.write_bytes(struct.pack("<Q", len(text)) + text)  # the safetensors layout: header length, header, data
    with pytest.raises(UserError, match=r"holds 10001 tensors, more than any network ganforge reads \(10000\)"):
        load_snapshot(path)


def test_weights_that_are_not_finite_are_refused(G, tmp_path):
    path = tmp_path / "s.safetensors"
    broken = Generator(**ARCH)
    with torch.no_grad():
        broken.mapping.fc0.weight.fill_(float("inf"))
    save_snapshot(path, broken, {})
    with pytest.raises(UserError, match="damaged weights, 1 tensors hold NaN or infinite values"):
        load_snapshot(path)


def test_every_constructor_argument_of_every_network_has_a_limit():
    import inspect

    from ganforge.limits import ARCHITECTURE_ARGUMENTS

    for network in (Generator, Discriminator, StyleGAN3Generator):
        for p in inspect.signature(network).parameters.values():
            assert p.kind is not p.POSITIONAL_OR_KEYWORD or p.name in ARCHITECTURE_ARGUMENTS, (network, p.name)


def test_snapshots_written_today_are_the_same_bytes_each_time(G, tmp_path):
    save_snapshot(tmp_path / "a.safetensors", G, {"kimg": 1})
    save_snapshot(tmp_path / "b.safetensors", G, {"kimg": 1})
    assert (tmp_path / "a.safetensors").read_bytes() == (tmp_path / "b.safetensors").read_bytes()
    assert load_snapshot(tmp_path / "a.safetensors")[1] == {"kimg": 1}


def test_a_weights_file_is_checked_whole_without_building_its_network(G, tmp_path):
    from ganforge.snapshot import check_weights_file

    save_snapshot(tmp_path / "G.safetensors", G, {})
    save_discriminator(tmp_path / "D.safetensors", Discriminator(**ARCH), {})
    assert check_weights_file(tmp_path / "G.safetensors") == "ganforge-snapshot"
    assert check_weights_file(tmp_path / "D.safetensors") == "ganforge-discriminator"
    rewrite(tmp_path / "G.safetensors", G, generator=json.dumps({**G.config, "mapping_layers": 10**7}))
    with pytest.raises(UserError, match="mapping_layers=10000000: must be an integer from 1 to 32"):
        check_weights_file(tmp_path / "G.safetensors")
    with pytest.raises(UserError, match="no such file"):
        check_weights_file(tmp_path / "missing.safetensors")
