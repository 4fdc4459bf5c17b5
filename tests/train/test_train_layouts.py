"""`--g-arch` and `--d-arch`: StyleGAN2's G and D layouts (orig, skip, resnet; StyleGAN2 Sec. 4.1, Fig. 7) with the
official defaults per preset, refused where a network has no such choice, taken from pretrained files, recorded in
checkpoints (older ones read as the layouts they were built with) and never resumed across."""

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from train_helpers import final_checkpoint, make_dataset, tiny_args, weights_found

from ganforge.bench.options import BenchOptions
from ganforge.bench.shape import Shape
from ganforge.bench.training import training_config
from ganforge.cli import main
from ganforge.config import Config, maths_fields, upgrade
from ganforge.errors import UserError
from ganforge.nets.configured import make_networks
from ganforge.train.checkpointing import check_config
from ganforge.train.options import TrainOptions
from ganforge.train.resolver import DatasetFacts, Facts, resolve
from ganforge.train.resume import Found


def _resolve(preset: str, resolution: int = 32, found=None, **given) -> Config:
    options = TrainOptions(data="/data/d.zip", outdir="/nonexistent/runs", preset=preset, **given)
    facts = Facts(DatasetFacts(resolution=resolution, channels=3, label_dim=0, name="d"), 1, "cpu", found=found)
    return resolve(options, facts)


def _layouts(cfg: Config) -> tuple[str | None, str | None]:
    return cfg.model.g_arch, cfg.model.d_arch


def _problems(preset: str, **given) -> list[str]:
    with pytest.raises(UserError) as caught:
        _resolve(preset, **given)
    return caught.value.problems


@pytest.mark.parametrize(
    "preset, layouts",
    [("stylegan2", ("skip", "resnet")), ("tiny", ("skip", "resnet")), ("cifar", ("skip", "orig")),
     ("stylegan3-t", (None, "resnet")), ("tiny3", (None, "resnet")), ("tiny-r3gan", (None, None))],
)  # fmt: skip
def test_each_preset_has_the_official_layouts(preset, layouts):
    assert _layouts(_resolve(preset)) == layouts


def test_given_layouts_replace_the_presets_and_build_those_networks():
    cfg = _resolve("tiny", g_arch="orig", d_arch="skip")
    assert _layouts(cfg) == ("orig", "skip")
    G, D = make_networks(cfg)
    assert (G.config["architecture"], D.config["architecture"]) == ("orig", "skip")
    assert _layouts(_resolve("cifar", d_arch="resnet")) == ("skip", "resnet")
    G3, D3 = make_networks(_resolve("tiny3", d_arch="orig"))
    assert "architecture" not in G3.config and D3.config["architecture"] == "orig"


def test_a_layout_the_network_does_not_have_is_refused_with_the_fix():
    assert "--g-arch resnet: the stylegan3-t generator has no such choice; drop --g-arch or pass a StyleGAN2 --cfg" in (
        _problems("tiny3", g_arch="resnet")
    )
    problems = _problems("tiny-r3gan", g_arch="orig", d_arch="skip")
    assert "--g-arch orig: the r3gan generator has no such choice; drop --g-arch or pass a StyleGAN2 --cfg" in problems
    assert (
        "--d-arch skip: R3GAN's discriminator has no such choice; drop --d-arch or pass a StyleGAN2 or StyleGAN3 --cfg"
        in problems
    )
    assert _problems("tiny", g_arch="dense") == ["--g-arch dense: unknown; use one of orig, skip, resnet"]


def test_pretrained_networks_decide_their_layouts():
    """The file's layouts win over the preset's; an option naming another is refused; a generator file without D
    leaves D's layout to the options."""
    found = weights_found("/w/net.safetensors", _resolve("tiny", g_arch="resnet", d_arch="orig"))
    assert _layouts(_resolve("tiny", found=found)) == ("resnet", "orig")
    assert _layouts(_resolve("tiny", found=found, g_arch="resnet")) == ("resnet", "orig")
    assert _problems("tiny", found=found, g_arch="skip", d_arch="orig") == [
        "--g-arch skip: /w/net.safetensors has resnet, and its networks decide their layouts; drop --g-arch"
    ]
    facts = dataclasses.replace(found.named.pretrained, d_arch=None, held=("G_ema",))
    g_only = Found(dataclasses.replace(found.named, pretrained=facts))
    assert _layouts(_resolve("tiny", found=g_only)) == ("resnet", "resnet")
    assert _layouts(_resolve("tiny", found=g_only, d_arch="skip")) == ("resnet", "skip")


@pytest.mark.parametrize(
    "generator, layouts",
    [("stylegan2", {"g_arch": "skip", "d_arch": "resnet"}), ("stylegan3-r", {"d_arch": "resnet"}), ("r3gan", {})],
)
def test_a_config_from_before_the_layouts_reads_as_the_layouts_it_was_built_with(generator, layouts):
    old = {"preset": "x", "model": {"generator": generator, "z_dim": 8}}
    assert upgrade(old) == {"preset": "x", "model": {"generator": generator, "z_dim": 8, **layouts}}
    flat = {"model.generator": generator}
    assert upgrade(flat) == flat | {f"model.{key}": value for key, value in layouts.items()}
    assert upgrade({"preset": "x"}) == {"preset": "x"}  # no networks described: nothing to fill in


def test_a_checkpoint_of_other_layouts_is_refused_naming_the_options():
    trained = _resolve("tiny")
    older = {key: value for key, value in maths_fields(trained.to_dict()).items() if "_arch" not in key}
    assert check_config({"config": older}, trained, Path("ckpt")) == []  # a checkpoint from before the choice
    with pytest.raises(UserError) as caught:
        check_config({"config": older}, _resolve("tiny", g_arch="orig", d_arch="skip"), Path("ckpt"))
    text = "\n".join(caught.value.problems)
    assert "model.g_arch: 'skip' -> 'orig' (set by --g-arch / --cfg)" in text
    assert "model.d_arch: 'resnet' -> 'skip' (set by --d-arch / --cfg)" in text
    assert "--allow-config-change" not in text and "--g-arch" in caught.value.problems[-1]


def test_bench_times_the_layouts_train_would_build():
    shape = Shape(resolution=16, channels=3, label_dim=0, sources={"resolution": "--resolution", "channels": "default"})
    cfg = training_config(BenchOptions(preset="tiny", g_arch="resnet", d_arch="orig"), shape, 1, "cpu")
    assert _layouts(cfg) == ("resnet", "orig")


def test_a_run_of_plain_networks_trains_records_its_layouts_generates_measures_and_reports(tmp_path):
    data = make_dataset(tmp_path / "squares")
    runner, outdir = CliRunner(), tmp_path / "runs"
    result = runner.invoke(main, tiny_args(data, outdir, kimg=0.016, g_arch="orig", d_arch="orig"))
    assert result.exit_code == 0, result.output
    ckpt = final_checkpoint(outdir)
    (run,) = outdir.iterdir()
    model = json.loads((run / "config.json").read_text())["model"]
    assert (model["g_arch"], model["d_arch"]) == ("orig", "orig")
    snapshot = sorted(run.glob("snapshots/*.safetensors"))[-1]
    images = tmp_path / "images"
    result = runner.invoke(main, ["generate", "--network", str(snapshot), "--seeds", "0-1", "--outdir", str(images)])
    assert result.exit_code == 0, result.output
    assert len(list(images.glob("*.png"))) == 2
    metrics = ["metrics", "--network", str(snapshot), "--data", str(data), "--metrics", "swd16k", "--num-gen", "8",
               "--device", "cpu", "--workers", "0", "--cache", str(tmp_path / "cache")]  # fmt: skip
    result = runner.invoke(main, metrics)
    assert result.exit_code == 0 and "swd16k_avg" in result.output, result.output
    result = runner.invoke(main, ["report", str(run)])
    assert result.exit_code == 0 and (run / "report.html").is_file(), result.output
    result = runner.invoke(main, tiny_args(data, outdir, kimg=0.032, resume=ckpt))
    assert result.exit_code == 2 and "model.g_arch: 'orig' -> 'skip' (set by --g-arch / --cfg)" in result.output
