"""`ganforge import`, `generate --network` and `metrics --network` with foreign files (NVlabs PyTorch and TensorFlow
pickles) end to end: the round trip gives the pixels of the original tensors loaded by hand; a malicious or unknown
file exits 2 with one message and no side effect."""

import os

import numpy as np
import PIL.Image
import pytest
import tf_fixtures as tfx
import torch
from click.testing import CliRunner
from interop_fixtures import discriminator_kwargs, generator_kwargs, network_pickle, persistent_tree, random_weights

from ganforge.cli import main
from ganforge.data.loader import to_uint8
from ganforge.nets import Discriminator, Generator

ARCH = dict(resolution=16, z_dim=8, w_dim=8, channel_base=64, channel_max=8, mapping_layers=2, c_dim=2)


@pytest.fixture(scope="module")
def official(tmp_path_factory):
    """An NVlabs pickle, and its G_ema as a ganforge Generator holding the same tensors (the by-hand reference)."""
    G_ema = random_weights(Generator(**ARCH), seed=7)
    D = random_weights(Discriminator(**ARCH), seed=8)
    path = tmp_path_factory.mktemp("official") / "network.pkl"
    trees = {"G_ema": persistent_tree(G_ema, generator_kwargs(G_ema)), "D": persistent_tree(D, discriminator_kwargs(D))}
    path.write_bytes(network_pickle(trees))
    return path, G_ema


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_import_then_generate_gives_the_original_pixels(official, tmp_path):
    path, G_ema = official
    result = run("import", path, tmp_path / "G.safetensors")
    assert result.exit_code == 0, result.output
    assert f"wrote {tmp_path / 'G.safetensors'}: G_ema of {path} (NVlabs pickle)" in result.output
    seeds = ["--seeds", "3,4", "--class", "1", "--trunc", "0.6", "--device", "cpu"]
    assert run("generate", "--network", tmp_path / "G.safetensors", "--outdir", tmp_path / "a", *seeds).exit_code == 0
    result = run("generate", "--network", path, "--outdir", tmp_path / "b", *seeds)  # converted in memory
    assert result.exit_code == 0 and "img/s on cpu" in result.output, result.output
    z = torch.from_numpy(np.stack([np.random.RandomState(s).randn(8) for s in (3, 4)])).float()
    with torch.no_grad():
        expected = to_uint8(G_ema(z, torch.eye(2)[[1, 1]], psi=0.6, noise_mode="const")).permute(0, 2, 3, 1).numpy()
    for i, name in enumerate(("seed0000003.png", "seed0000004.png")):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
        assert np.array_equal(np.asarray(PIL.Image.open(tmp_path / "a" / name)), expected[i])


def test_import_discriminator_file(official, tmp_path):
    result = run("import", official[0], tmp_path / "D.safetensors", "--which", "D")
    assert result.exit_code == 0 and "D of" in result.output, result.output


def test_refused_and_unknown_files_exit_2_with_one_message(official, tmp_path):
    marker = tmp_path / "payload-ran"
    evil = tmp_path / "evil.pkl"

    class Payload:
        def __reduce__(self):
            return os.system, (f"touch {marker}",)

    evil.write_bytes(network_pickle({"G_ema": Payload()}))
    commands = [("import", evil, tmp_path / "out.safetensors")]
    commands.append(("generate", "--network", evil, "--outdir", tmp_path, "--seeds", "1"))
    for args in commands:
        result = run(*args)
        assert result.exit_code == 2 and "Traceback" not in result.output
        assert "error: " in result.output and "refused: the pickle asks for posix.system" in result.output
    assert not marker.exists() and not (tmp_path / "out.safetensors").exists()
    unknown = tmp_path / "notes.txt"
    unknown.write_text("hello")
    result = run("import", unknown, tmp_path / "out.safetensors")
    assert (
        result.exit_code == 2
        and "of unknown content (first bytes 68 65 6c 6c 6f); supported: a ganforge" in result.output
    )
    result = run("import", official[0], tmp_path / "out.pt")
    assert result.exit_code == 2 and "DEST" in result.output and "NAME.safetensors" in result.output
    result = run("generate", "--network", official[0], "--outdir", tmp_path, "--seeds", "1")
    assert result.exit_code == 2 and "error: --class: " in result.output and "is conditional" in result.output


def test_a_tensorflow_pickle_is_read_by_import_generate_and_its_which(tmp_path):
    G, G_ema = random_weights(Generator(**ARCH), seed=11), random_weights(Generator(**ARCH), seed=12)
    D = random_weights(Discriminator(**ARCH), seed=13)
    path = tmp_path / "stylegan2-tf.pkl"
    path.write_bytes(tfx.tf_pickle(tfx.tf_generator(G, name="G"), tfx.tf_discriminator(D), tfx.tf_generator(G_ema)))
    for which in ("G_ema", "G", "D"):
        result = run("import", path, tmp_path / f"{which}.safetensors", "--which", which)
        assert result.exit_code == 0, result.output
        assert f"{which} of {path} (NVlabs TensorFlow pickle)" in result.output
    seeds = ["--seeds", "3", "--class", "1", "--device", "cpu"]
    for network, folder in ((path, "from-pickle"), (tmp_path / "G_ema.safetensors", "from-snapshot")):
        assert run("generate", "--network", network, "--outdir", tmp_path / folder, *seeds).exit_code == 0
    z = torch.from_numpy(np.random.RandomState(3).randn(1, 8)).float()
    with torch.no_grad():
        expected = to_uint8(G_ema(z, torch.eye(2)[[1]], noise_mode="const")).permute(0, 2, 3, 1).numpy()
    for folder in ("from-pickle", "from-snapshot"):
        assert np.array_equal(np.asarray(PIL.Image.open(tmp_path / folder / "seed0000003.png")), expected[0])


@pytest.mark.parametrize("kind", ["pytorch", "tensorflow"])
def test_metrics_reads_a_foreign_network_like_its_imported_snapshot(tmp_path, kind):
    unconditional = {**ARCH, "c_dim": 0}
    G_ema = random_weights(Generator(**unconditional), seed=9)
    D = random_weights(Discriminator(**unconditional), seed=10)
    pickle_path = tmp_path / "network.pkl"
    if kind == "pytorch":
        trees = {
            "G_ema": persistent_tree(G_ema, generator_kwargs(G_ema)),
            "D": persistent_tree(D, discriminator_kwargs(D)),
        }
        pickle_path.write_bytes(network_pickle(trees))
    else:
        Gs = tfx.tf_generator(G_ema)
        pickle_path.write_bytes(tfx.tf_pickle(Gs, tfx.tf_discriminator(D), Gs))
    assert run("import", pickle_path, tmp_path / "G.safetensors").exit_code == 0
    (tmp_path / "reals").mkdir()
    rng = np.random.default_rng(0)
    for i in range(8):
        PIL.Image.fromarray(rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)).save(tmp_path / "reals" / f"{i}.png")
    values = []
    for network in (pickle_path, tmp_path / "G.safetensors"):
        options = ["--metrics", "swd16k", "--num-gen", "8", "--workers", "0", "--device", "cpu"]
        result = run("metrics", "--network", network, "--data", tmp_path / "reals", *options, "--outdir", tmp_path)
        assert result.exit_code == 0, result.output
        values.append([line.split("(")[0] for line in result.output.splitlines() if line.startswith("swd16k")])
    assert values[0] == values[1] and values[0], values
