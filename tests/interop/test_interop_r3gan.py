"""Released R3GAN network snapshots (brownvc/R3GAN) read as data: the imported G and D compute what the released
code computed (reference outputs made by running it), `ganforge import` and `generate` use them end to end, and a
file that is not what the released code writes is refused with one message, nothing from it run."""

import os

import numpy as np
import PIL.Image
import pytest
import r3gan_fixtures as r3
import torch
from click.testing import CliRunner

from ganforge.cli import main
from ganforge.data.loader import to_uint8
from ganforge.errors import UserError
from ganforge.interop.network import R3GAN, file_kind, read_network
from ganforge.interop.pretrained import describe, read_pretrained
from ganforge.interop.r3gan_pickle import read_r3gan_pickle
from ganforge.snapshot import load_snapshot

ATOL = 1e-5


@pytest.fixture(scope="module")
def reference():
    return r3.reference()


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory) -> dict:
    """A released-layout snapshot per reference configuration, holding the reference weights."""
    folder = tmp_path_factory.mktemp("r3gan")
    paths = {}
    for name in ("uncond", "cond"):
        paths[name] = folder / f"{name}.pkl"
        paths[name].write_bytes(r3.snapshot_bytes(*r3.released_networks(name)))
    return paths


def written(tmp_path, G, D, name="snapshot.pkl"):
    path = tmp_path / name
    path.write_bytes(r3.snapshot_bytes(G, D))
    return path


@pytest.mark.parametrize("name", ["uncond", "cond"])
def test_imported_networks_reproduce_the_released_outputs(snapshots, reference, name):
    configs, tensors = reference
    cfg, path = configs[name], snapshots[name]
    assert file_kind(path) == R3GAN
    G, meta = read_network(path, "G_ema")
    D, _ = read_network(path, "D")
    z, c = tensors[f"{name}.z"], tensors[f"{name}.c"]
    with torch.no_grad():
        images, logits = G(z, c), D(tensors[f"{name}.img"], c)
    assert (images - tensors[f"{name}.img"]).abs().max() <= ATOL
    assert (logits.flatten() - tensors[f"{name}.logits"]).abs().max() <= ATOL
    expected = {k: cfg[k] for k in ("resolution", "c_dim", "z_dim", "widths", "cardinalities", "blocks")}
    assert meta["details"] == {**expected, "img_channels": 3, "expansion": 2, "kernel": 3,
                               "embed_dim": cfg["g_embed"], "num_fp16_res": 0}  # fmt: skip
    assert D.config["embed_dim"] == cfg["d_embed"] and meta["source_format"] == R3GAN


def test_import_then_generate(snapshots, tmp_path):
    runner = CliRunner()
    result = runner.invoke(main, ["import", str(snapshots["uncond"]), str(tmp_path / "G.safetensors")])
    assert result.exit_code == 0 and "(R3GAN pickle)" in result.output, result.output
    args = ["--network", tmp_path / "G.safetensors", "--seeds", "5", "--outdir", tmp_path, "--device", "cpu"]
    result = runner.invoke(main, ["generate", *map(str, args)])
    assert result.exit_code == 0, result.output
    G, _ = read_network(snapshots["uncond"])
    z = torch.from_numpy(np.random.RandomState(5).randn(1, G.z_dim)).float()
    with torch.no_grad():
        expected = to_uint8(G(z, torch.zeros(1, 0))).permute(0, 2, 3, 1).numpy()[0]
    assert np.array_equal(np.asarray(PIL.Image.open(tmp_path / "seed0000005.png")), expected)


def test_a_training_start_takes_every_network(snapshots):
    pretrained = read_pretrained([snapshots["cond"]])
    facts = describe(pretrained)
    assert facts.generator == "r3gan" and facts.held == ("G", "G_ema", "D") and facts.augment_p is None
    assert facts.d_arch["embed_dim"] == 16 and facts.g_arch["embed_dim"] == 8


def test_the_precision_of_the_top_stages_is_read(tmp_path):
    G, D = r3.released_networks("uncond")
    G.Model.MainLayers[2].DataType = torch.bfloat16  # G's top stage (16x16)
    D.Model.MainLayers[0].DataType = torch.bfloat16  # D's top stage
    path = written(tmp_path, G, D)
    assert read_network(path, "G")[1]["details"]["num_fp16_res"] == 1
    assert read_network(path, "D")[1]["details"]["num_fp16_res"] == 1


def test_a_global_outside_the_allow_list_is_refused_before_anything_runs(tmp_path):
    marker = tmp_path / "payload-ran"

    class Payload:
        def __reduce__(self):
            return os.system, (f"touch {marker}",)

    G, D = r3.released_networks("uncond")
    G.Model.MainLayers[1].DataType = Payload()
    path = written(tmp_path, G, D)
    for which in ("G_ema", "D"):  # the whole file is refused, whichever network is asked for
        with pytest.raises(UserError, match=r"refused: the pickle asks for posix\.system, which is not part of a "):
            read_network(path, which)
    assert not marker.exists()


def _box_kernel(G, D):
    G.Model.MainLayers[1].Layers[0].Resampler.Kernel.fill_(1 / 16)


def _wrong_groups(G, D):  # the weight is grouped in 4, the attribute says 2
    G.Model.MainLayers[0].Layers[1].LinearLayer2.Layer.groups = 2


def _wrong_z_dim(G, D):
    G.z_dim = 9


def _embedding_without_classes(G, D):  # as R3GAN's unconditional ImageNet configurations
    G.Model = r3.Generator(r3.reference()[0]["uncond"], inputs=8 + 8).Model


def _bottom_stage_in_bfloat16(G, D):  # the top stage too; ganforge's num_fp16_res counts from the top
    G.Model.MainLayers[0].DataType = G.Model.MainLayers[2].DataType = torch.bfloat16


def _unpadded_conv(G, D):
    G.Model.MainLayers[0].Layers[1].LinearLayer2.Layer.padding = (0, 0)


def _downsampler_in_g(G, D):
    G.Model.MainLayers[2].Layers[0].Resampler = r3.Downsampler()


@pytest.mark.parametrize(
    "damage, message",
    [
        (_box_kernel, "G_ema.Model.MainLayers.1.Layers.0.Resampler.Kernel is not the [1, 3, 3, 1] filter"),
        (_wrong_groups, "architecture mismatch, tensor synthesis.stages.0.blocks.0.conv2.weight has shape"),
        (_wrong_z_dim, "takes 8 inputs, but z_dim=9 and a class embedding of 0 make 9"),
        (_embedding_without_classes, "configured with a class-embedding size and no classes"),
        (_bottom_stage_in_bfloat16, "computes stages 0, 2 (from 4x4) in bfloat16"),
        (_unpadded_conv, "LinearLayer2.Layer (a Conv2d) has padding=(0, 0), not (1, 1)"),
        (_downsampler_in_g, "Resampler is a R3GAN.Resamplers.InterpolativeDownsamplerCUDA, where the released"),
    ],
)
def test_a_network_unlike_the_released_ones_is_refused(tmp_path, damage, message):
    G, D = r3.released_networks("uncond")
    damage(G, D)
    with pytest.raises(UserError) as err:
        read_network(written(tmp_path, G, D))
    assert message in str(err.value)


GENERATOR = b"ctraining.networks\nGenerator\n"  # GLOBAL; then ")" EMPTY_TUPLE, "\x81" NEWOBJ, "}" EMPTY_DICT, "b" BUILD


@pytest.mark.parametrize(
    "stream, message",
    [
        (GENERATOR + b")\x81}b}b.", "sets the state of a training.networks.Generator twice"),
        (GENERATOR + b")\x81.", "a module whose state is never set"),
        (GENERATOR + b"K\x01\x85\x81}b.", "makes a training.networks.Generator with arguments"),  # (1,) NEWOBJ
        (GENERATOR + b")R.", "calls the module class training.networks.Generator"),  # REDUCE
        (b"ccopyreg\n__newobj__\n" + GENERATOR + b"\x85R.", "a module whose state is never set"),  # NEWOBJ as REDUCE
        (GENERATOR + b"ctorch\nfloat32\n)\x81.", "makes an object (NEWOBJ) of something that is not a module class"),
    ],
)
def test_modules_are_made_empty_and_given_their_state_once(tmp_path, stream, message):
    path = tmp_path / "crafted.pkl"
    path.write_bytes(b"\x80\x02" + stream)
    with pytest.raises(UserError, match="not a readable R3GAN network pickle") as err:
        read_r3gan_pickle(path)
    assert message in str(err.value)


def test_a_truncated_file_is_refused(snapshots, tmp_path):
    path = tmp_path / "truncated.pkl"
    path.write_bytes(snapshots["cond"].read_bytes()[:20000])
    assert file_kind(path) == R3GAN
    with pytest.raises(UserError, match="not a readable R3GAN network pickle"):
        read_network(path)


def test_fine_tuning_starts_from_a_released_file_whose_stages_a_config_describes(snapshots, tmp_path):
    """`train --resume r3gan.pkl --cfg tiny-r3gan`: the run's networks are the file's (its starting snapshot is the
    file's G_ema); a file whose stages no ganforge config describes (blocks 1, 2, 1) is refused, saying why."""
    data = tmp_path / "data"
    data.mkdir()
    for i in range(4):
        PIL.Image.fromarray(np.full((8, 8, 3), 40 * i, np.uint8)).save(data / f"{i}.png")
    cfg = dict(resolution=8, c_dim=0, z_dim=8, widths=[16, 8], cardinalities=[2, 1], blocks=[1, 1], g_embed=0,
               d_embed=0)  # fmt: skip
    torch.manual_seed(0)
    path = written(tmp_path, r3.Generator(cfg), r3.Discriminator(cfg), "uniform.pkl")
    base = ["train", "--data", str(data), "--cfg", "tiny-r3gan", "--kimg", "0.004", "--batch", "4", "--tick", "0.004",
            "--workers", "0", "--device", "cpu", "--no-report"]  # fmt: skip
    result = CliRunner().invoke(main, [*base, "--outdir", str(tmp_path / "runs"), "--resume", str(path)])
    assert result.exit_code == 0, result.output
    (start, _) = sorted((tmp_path / "runs").glob("*/snapshots/*.safetensors"))
    G, _ = read_network(path, "G_ema")
    loaded, _ = load_snapshot(start)
    assert all(torch.equal(loaded.state_dict()[k], v) for k, v in G.state_dict().items())
    result = CliRunner().invoke(
        main, [*base, "--outdir", str(tmp_path / "other"), "--resume", str(snapshots["uncond"])]
    )
    assert result.exit_code == 2 and "blocks [1, 2, 1]" in result.stderr and "not ones ganforge" in result.stderr
