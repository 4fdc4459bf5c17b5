"""`train --resume FILE` from any pretrained source: an NVlabs pickle (G, D, G_ema and ADA's p), a rosinality
checkpoint (g, d, g_ema, ada_aug_p), a ganforge snapshot pair. The architecture comes from the file, what contradicts it
is refused naming both values, the run starts at kimg 0 with the file's weights and p, records the file's hash, and
continues bitwise after a stop like any run."""

import argparse
import dataclasses
import json
import sys
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner
from safetensors.torch import load_file
from train_helpers import make_dataset, tiny_args, tiny_options

from ganforge import checkpoint
from ganforge.cli import main
from ganforge.config.describe import PRETRAINED_START, small_data_advice
from ganforge.digest import file_sha256
from ganforge.errors import UserError
from ganforge.interop.pretrained import read_pretrained
from ganforge.nets import Discriminator, Generator
from ganforge.snapshot import save_discriminator, save_snapshot
from ganforge.train import resolve, run
from ganforge.train.resolver import observe, resolve_run

sys.path.insert(0, str(Path(__file__).parents[1] / "interop"))
import rosinality_reference as ref  # noqa: E402
import tf_fixtures as tfx  # noqa: E402
from interop_fixtures import (  # noqa: E402
    discriminator_kwargs,
    generator_kwargs,
    network_pickle,
    persistent_tree,
    random_weights,
)

STEP = 0.008  # one batch of the tiny preset's 8 images
ARCH = dict(z_dim=16, w_dim=16, channel_base=128, channel_max=16, mapping_layers=3)  # not the tiny preset's


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("pretrained") / "squares")  # 8x8, 1 channel


def nvlabs_pickle(path: Path, resolution: int = 8, augment_p: float = 0.3, d_max: int = 16, **g_extra) -> dict:
    """An NVlabs pickle of G, G_ema and D of ARCH (G with `g_extra`, D's channel max `d_max`) with distinct random
    weights; -> the networks."""
    nets = {
        "G": random_weights(Generator(resolution=resolution, img_channels=1, **ARCH, **g_extra), 1),
        "G_ema": random_weights(Generator(resolution=resolution, img_channels=1, **ARCH, **g_extra), 2),
        "D": random_weights(
            Discriminator(resolution=resolution, img_channels=1, channel_base=128, channel_max=d_max), 3
        ),
    }
    trees = {
        name: persistent_tree(net, discriminator_kwargs(net) if name == "D" else generator_kwargs(net))
        for name, net in nets.items()
    }
    path.write_bytes(network_pickle(trees, augment_p=augment_p))
    return nets


@pytest.fixture(scope="module")
def pickled(tmp_path_factory) -> tuple[Path, dict]:
    path = tmp_path_factory.mktemp("pkl") / "network-snapshot.pkl"
    return path, nvlabs_pickle(path)


def test_the_architecture_hash_and_plan_come_from_the_pickle(data, pickled, tmp_path):
    pkl, _ = pickled
    options = tiny_options(data, tmp_path, resume=str(pkl))
    cfg, source = resolve_run(options, observe(options))
    m = cfg.model
    assert (m.z_dim, m.w_dim, m.channel_base, m.channel_max, m.mapping_layers) == (16, 16, 128, 16, 3)
    assert cfg.run.resume_sha256 == (file_sha256(pkl),) and cfg.loss.blur_sigma == 0
    assert source.kind == "weights" and source.pretrained.held == ("G", "G_ema", "D")
    result = CliRunner().invoke(main, [*tiny_args(data, tmp_path, resume=pkl, aug="ada"), "--dry-run"])
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert f"would start {tmp_path / '00000-squares-tiny-gpus1-batch8'} from the weights of {pkl}" in lines
    assert f"from {pkl} (NVlabs pickle, sha256 {file_sha256(pkl)[:12]}): the weights of G, G_ema, D" in lines
    assert f"from {pkl}: the architecture, stylegan2, channel base 128, max 16, mapping 3 layers, z 16, w 16" in lines
    assert "ADA's p starts at 0.3, where the source left it" in lines
    assert "starting fresh: optimisers, progress (kimg 0); the rest from --cfg tiny and the flags" in lines
    noaug = CliRunner().invoke(main, [*tiny_args(data, tmp_path, resume=pkl), "--dry-run"])  # tiny_args: noaug
    assert "the source's ADA p 0.3 is not used (--aug noaug)" in noaug.stderr


def _nvlabs(path: Path) -> Path:
    nvlabs_pickle(path)
    return path


def _rosinality(folder: Path) -> Path:
    channels = {4: 16, 8: 16}
    path = folder / "550000.pt"
    torch.save({"g_ema": ref.generator_state(8, 8, 2, channels, seed=1), "g": ref.generator_state(8, 8, 2, channels, 2),
                "d": ref.discriminator_state(8, channels, seed=3), "args": argparse.Namespace(size=8),
                "ada_aug_p": 0.25}, path)  # fmt: skip
    return path


def _tensorflow(folder: Path) -> Path:
    G, G_ema = (random_weights(Generator(resolution=8, img_channels=1, **ARCH), seed) for seed in (1, 2))
    D = random_weights(Discriminator(resolution=8, img_channels=1, channel_base=128, channel_max=16), 3)
    path = folder / "stylegan2-ada.pkl"
    path.write_bytes(tfx.tf_pickle(tfx.tf_generator(G, name="G"), tfx.tf_discriminator(D), tfx.tf_generator(G_ema)))
    return path


def _snapshot_pair(folder: Path) -> str:
    G = random_weights(Generator(resolution=8, img_channels=1, **ARCH), 1)
    D = random_weights(Discriminator(resolution=8, img_channels=1, channel_base=128, channel_max=16), 3)
    save_snapshot(folder / "G.safetensors", G, {})
    save_discriminator(folder / "D.safetensors", D, {})
    return f"{folder / 'G.safetensors'},{folder / 'D.safetensors'}"


# Each kind of source: (a maker of the --resume value in a folder, channels of its images, ADA's p it records).
SOURCES = {
    "nvlabs": (lambda folder: _nvlabs(folder / "network-snapshot.pkl"), 1, 0.3),
    "rosinality": (_rosinality, 3, 0.25),
    "tensorflow": (_tensorflow, 1, None),
    "snapshot-pair": (_snapshot_pair, 1, None),
}


@pytest.mark.parametrize("kind", SOURCES)
def test_a_run_starts_from_each_kind_of_source_and_resumes_bitwise(kind, data, tmp_path):
    make, channels, p = SOURCES[kind]
    resume = str(make(tmp_path))
    held = read_pretrained([Path(f) for f in resume.split(",")]).networks
    images = data if channels == 1 else make_dataset(tmp_path / "rgb", channels=3)
    whole, stopped = tmp_path / "whole", tmp_path / "stopped"
    assert run(resolve(tiny_options(images, whole, kimg=2 * STEP, tick=STEP, aug="ada", resume=resume))) == 0
    assert run(resolve(tiny_options(images, stopped, kimg=STEP, tick=STEP, aug="ada", resume=resume))) == 0
    assert run(resolve(tiny_options(images, stopped, kimg=2 * STEP, tick=STEP, aug="ada", resume=resume))) == 0
    (run_dir,) = whole.iterdir()
    start = load_file(run_dir / "checkpoints" / "ckpt-000000000" / "tensors.safetensors")
    for name in ("G", "G_ema", "D"):  # one generator in the file stands for both
        source = held.get(name, held.get("G_ema" if name == "G" else "G"))
        for key, value in ({} if source is None else source.state_dict()).items():
            assert torch.equal(start[f"{name}/{key}"], value), f"{name}.{key}"
    first = checkpoint.load(run_dir / "checkpoints" / "ckpt-000000000")
    assert first["augment"]["pipe"]["p"].item() == pytest.approx(p or 0.0) and first["loop"]["cur_nimg"] == 0
    (resumed,) = stopped.iterdir()
    assert "resuming at 0.008 kimg" in (resumed / "log.txt").read_text()  # the rerun continued its own run
    a, b = (checkpoint.load_latest(r / "checkpoints") for r in (run_dir, resumed))
    for net in ("G", "D", "G_ema"):
        for key, value in a[net].items():
            assert torch.equal(b[net][key], value), f"{net}.{key}"
    assert b["augment"]["pipe"]["p"] == a["augment"]["pipe"]["p"]


def test_fine_tuning_keeps_the_files_g_ema_and_lets_ada_react_within_the_run(data, pickled, tmp_path):
    pkl, nets = pickled
    scratch = resolve(tiny_options(data, tmp_path, aug="ada"))
    assert (scratch.schedule.ema_rampup, scratch.augment.ada_kimg) == (0.05, 20)  # the tiny row's
    tuned = resolve(tiny_options(data, tmp_path, aug="ada", resume=str(pkl)))
    assert (tuned.schedule.ema_rampup, tuned.augment.ada_kimg) == (None, 100)  # as the released setups resume
    assert resolve(tiny_options(data, tmp_path, aug="ada", resume=str(pkl), ada_kimg=30)).augment.ada_kimg == 30
    result = CliRunner().invoke(main, [*tiny_args(data, tmp_path, resume=pkl, aug="ada"), "--dry-run"])
    assert (
        "as a fine-tuning start: G_ema averages from the file's weights without a ramp-up; ADA moves p from 0 to 1 "
        "in 100 kimg"
    ) in result.stderr.splitlines()
    # One step: G_ema is the file's G_ema moved towards the trained G by the half-life's share, not replaced by G
    # (a ramp-up at 0 images gives the average no memory).
    assert run(resolve(tiny_options(data, tmp_path / "one", kimg=STEP, tick=STEP, resume=str(pkl)))) == 0
    (run_dir,) = (tmp_path / "one").iterdir()
    state = checkpoint.load_latest(run_dir / "checkpoints")
    beta = 0.5 ** (8 / (tuned.schedule.ema_kimg * 1000))
    for key, before in nets["G_ema"].state_dict().items():
        if key.endswith("w_avg") or "noise_const" in key:
            continue  # buffers are copied from G
        trained = state["G"][key]
        torch.testing.assert_close(state["G_ema"][key], trained.lerp(before, beta), rtol=0, atol=1e-6, msg=key)
    assert not torch.equal(state["G_ema"]["mapping.fc0.weight"], state["G"]["mapping.fc0.weight"])


def test_a_rosinality_checkpoint_gives_its_three_networks_and_p(tmp_path):
    path = _rosinality(tmp_path)
    pretrained = read_pretrained([path])
    assert set(pretrained.networks) == {"G", "G_ema", "D"} and pretrained.augment_p == 0.25
    G, G_ema = pretrained.networks["G"], pretrained.networks["G_ema"]
    assert G.config == G_ema.config and G.config["mapping_layers"] == 2 and G.config["img_channels"] == 3
    assert not torch.equal(G.mapping.fc0.weight, G_ema.mapping.fc0.weight)
    data = make_dataset(tmp_path / "rgb", channels=3)
    cfg = resolve(tiny_options(data, tmp_path / "runs", resume=str(path)))
    assert (cfg.model.z_dim, cfg.model.mapping_layers) == (8, 2)


def test_a_tensorflow_pickle_gives_g_d_and_gs_and_no_p(data, tmp_path):
    path = _tensorflow(tmp_path)
    pretrained = read_pretrained([path])
    assert set(pretrained.networks) == {"G", "G_ema", "D"} and pretrained.augment_p is None
    G, G_ema = pretrained.networks["G"], pretrained.networks["G_ema"]
    assert not torch.equal(G.mapping.fc0.weight, G_ema.mapping.fc0.weight)  # G and Gs told apart
    assert resolve(tiny_options(data, tmp_path, resume=str(path))).model.mapping_layers == 3


def test_what_contradicts_the_pickle_is_refused_naming_both(data, tmp_path):
    big = tmp_path / "big.pkl"
    nvlabs_pickle(big, resolution=16)
    problems = _problems(tiny_options(data, tmp_path, resume=str(big), cond=True, preset="tiny3"))
    assert (
        f"--data: 8x8 images with 1 channel(s), but {big} was trained on 16x16 with 1; rebuild the dataset to fit "
        "it: ganforge dataset build SRC DEST --resolution 16 --channels 1"
    ) in problems
    assert f"--cfg tiny3: builds a stylegan3-t generator, but {big} holds a stylegan2 one" in " ".join(problems)
    conditional = tmp_path / "conditional.pkl"
    nvlabs_pickle(conditional, c_dim=3)
    assert (
        f"--cond: {conditional} is conditional on 3 classes but this run has 0; pass --cond with a dataset of 3 classes"
    ) in _problems(tiny_options(data, tmp_path, resume=str(conditional)))
    mismatched = tmp_path / "mismatched.pkl"
    nvlabs_pickle(mismatched, d_max=32)
    (problem,) = _problems(tiny_options(data, tmp_path, resume=str(mismatched)))
    assert problem.startswith(f"--resume {mismatched}: its D differs from its G in channel_max 32 (G: 16), and ")
    damaged = tmp_path / "damaged.pkl"
    nvlabs_pickle(damaged, augment_p=2.0)
    (problem,) = _problems(tiny_options(data, tmp_path, resume=str(damaged)))
    assert problem == f"{damaged}: its augment_pipe.p is not a probability in [0, 1]; the file is damaged"


def test_widths_other_than_the_pickles_are_refused_and_its_own_accepted(data, pickled, tmp_path):
    path, _ = pickled
    problems = _problems(tiny_options(data, tmp_path, resume=str(path), cbase=256, cmax=32))
    assert problems == [
        f"--cbase 256: {path} has 128, and its networks decide their widths; drop --cbase",
        f"--cmax 32: {path} has 16, and its networks decide their widths; drop --cmax",
    ]
    model = resolve(tiny_options(data, tmp_path, resume=str(path), cbase=128, cmax=16)).model
    assert (model.channel_base, model.channel_max) == (128, 16)


def test_under_fp16_the_files_fp16_layers_and_clamp_are_taken_else_only_named(data, tmp_path):
    pkl = tmp_path / "fp16.pkl"
    nvlabs_pickle(pkl, num_fp16_res=2, conv_clamp=128)
    options = tiny_options(data, tmp_path, resume=str(pkl), precision="fp16")
    on_cuda = dataclasses.replace(observe(options), device_type="cuda")  # fp16 needs CUDA; only resolved here
    assert (resolve(options, on_cuda).precision.fp16_res, resolve(options, on_cuda).precision.conv_clamp) == (2, 128)
    fewer = dataclasses.replace(options, fp16_res=1)
    assert (resolve(fewer, on_cuda).precision.fp16_res, resolve(fewer, on_cuda).precision.conv_clamp) == (1, 128)
    fp32 = resolve(dataclasses.replace(options, precision="fp32"))
    assert (fp32.precision.fp16_res, fp32.precision.conv_clamp) == (0, None)
    result = CliRunner().invoke(main, [*tiny_args(data, tmp_path, resume=pkl, precision="fp32"), "--dry-run"])
    assert "(its fp16 in the top 2 resolutions applies under --precision fp16 only)" in result.stderr


def test_an_official_stylegan3_pickle_gives_its_generator_family_and_trains(tmp_path):
    """A StyleGAN3-R snapshot written by NVlabs' own code (G, D, G_ema, its AugmentPipe; the released kwargs with
    R's doubled widths) on a run without --cfg: the family, widths and layer count come from the file, the
    blurred-D warm-up is off, and a step trains from its networks and ADA's p."""
    pkl = Path(__file__).parents[1] / "interop" / "fixtures" / "stylegan3-r.pkl"
    rgb = make_dataset(tmp_path / "rgb", res=16, channels=3)
    options = tiny_options(rgb, tmp_path / "runs", kimg=STEP, tick=STEP, resume=str(pkl), preset=None)
    cfg = resolve(options)
    m = cfg.model
    assert (m.generator, m.synthesis_layers, m.channel_base, m.channel_max) == ("stylegan3-r", 4, 256, 16)
    assert cfg.loss.blur_sigma == 0 and cfg.schedule.ema_rampup is None
    assert run(cfg) == 0
    (run_dir,) = (tmp_path / "runs").iterdir()
    start = checkpoint.load(run_dir / "checkpoints" / "ckpt-000000000")
    pretrained = read_pretrained([pkl])
    assert pretrained.augment_p == 0.25
    for name in ("G", "G_ema", "D"):
        for key, value in pretrained.networks[name].state_dict().items():
            assert torch.equal(start[name][key], value), f"{name}.{key}"


def _problems(options) -> list[str]:
    with pytest.raises(UserError) as raised:
        resolve(options)
    return list(raised.value.problems)


def test_a_small_dataset_without_the_recipe_is_warned_about(data, pickled, tmp_path):
    cfg = resolve(tiny_options(data, tmp_path))  # 32 images, --aug noaug, from scratch
    assert cfg.data.images == 32
    assert small_data_advice(cfg) == [
        "warning: small dataset: 32 images, few for a GAN (D overfits them within a few kimg); the small-data recipe "
        f"(docs/fine-tuning.md) adds {PRETRAINED_START}; augmentation (--aug ada, not noaug)"
    ]
    recipe = dict(resume=str(pickled[0]), aug="ada", freeze_d=4, ada_kimg=0.032)
    assert small_data_advice(resolve(tiny_options(data, tmp_path, **recipe))) == []
    (slow,) = small_data_advice(resolve(tiny_options(data, tmp_path, **recipe | {"ada_kimg": 500})))
    assert slow.endswith("adds an --ada-kimg within the run's length (--ada-kimg 500 over --kimg 0.032: p can rise "
                         "only 6.4e-05 in the whole run)")  # fmt: skip
    result = CliRunner().invoke(main, [*tiny_args(data, tmp_path), "--dry-run"])
    assert "warning: small dataset: 32 images, few for a GAN" in result.stderr
    # From scratch with the rest of the recipe (the demo's `--cfg tiny` on the digits, whose ADA moves within its
    # run): a note that names the pretrained start, no warning (the demo's own preset was warned about).
    (scratch,) = small_data_advice(resolve(tiny_options(data, tmp_path, aug="ada", kimg=None)))
    assert scratch.startswith("note: small dataset: 32 images") and scratch.endswith(f"adds {PRETRAINED_START}")


def test_a_run_or_checkpoint_of_other_data_is_a_fine_tuning_start(data, tmp_path):
    """A ganforge run pretrained on other data (here `circles`) fine-tunes like any pretrained file: --resume RUNDIR
    takes its newest checkpoint's G, G_ema, D and ADA's p into a new run at kimg 0; the same data continues it."""
    circles = make_dataset(tmp_path / "circles", brightness=0.8)
    source = tmp_path / "source"
    assert run(resolve(tiny_options(circles, source, kimg=4 * STEP, tick=4 * STEP, aug="ada", ada_kimg=1))) == 0
    (source_run,) = source.iterdir()
    ckpt = source_run / "checkpoints" / "ckpt-000000032"
    trained = checkpoint.load(ckpt)
    digest = json.loads((ckpt / "manifest.json").read_text())["files"]["tensors.safetensors"]["sha256"]
    result = CliRunner().invoke(main, [*tiny_args(data, tmp_path / "tuned", resume=source_run, aug="ada"), "--dry-run"])
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert (
        f"would start {tmp_path / 'tuned' / '00000-squares-tiny-gpus1-batch8'} from the weights of {source_run}"
        in lines
    )
    assert (
        f"from {source_run} (ganforge checkpoint ckpt-000000032, sha256 {digest[:12]}): the weights of G, G_ema, D"
        in lines
    )
    options = tiny_options(data, tmp_path / "tuned", kimg=STEP, tick=STEP, aug="ada", resume=str(source_run))
    cfg = resolve(options)
    assert cfg.run.resume_sha256 == (digest,) and cfg.schedule.ema_rampup is None
    assert run(cfg) == 0
    (tuned,) = (tmp_path / "tuned").iterdir()
    start = checkpoint.load(tuned / "checkpoints" / "ckpt-000000000")
    assert start["loop"]["cur_nimg"] == 0 and start["opt_G"]["state"] == {}  # progress and optimisers fresh
    for name in ("G", "G_ema", "D"):
        for key, value in trained[name].items():
            assert torch.equal(start[name][key], value), f"{name}.{key}"
    assert torch.equal(start["augment"]["pipe"]["p"], trained["augment"]["pipe"]["p"])
    same_data = tiny_options(circles, tmp_path / "more", resume=str(ckpt))
    assert resolve_run(same_data, observe(same_data))[1].kind == "checkpoint"  # its own data: a continued run
    own_run = tiny_options(circles, tmp_path / "more", resume=str(source_run))
    assert resolve_run(own_run, observe(own_run))[1].kind == "continue"
    other = tiny_options(data, tmp_path / "other", resume=str(ckpt))
    cfg, from_ckpt = resolve_run(other, observe(other))
    assert from_ckpt.kind == "weights" and from_ckpt.pretrained.formats == ("ganforge checkpoint ckpt-000000032",)
