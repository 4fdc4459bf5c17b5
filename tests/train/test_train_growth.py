"""`train --grow`: progressive growing resolved into the networks and the schedule (or refused, with the fix, where
it cannot grow), trained through a fade with Adam reset where fades start and end, stopped in the middle of a fade
and continued bitwise, snapshots and their log lines saying the stage, and the finished networks fine-tuned from
(their growth layers dropped) while a half-grown one is refused."""

import json

import pytest
import safetensors
import torch
from click.testing import CliRunner
from train_helpers import continued_equals_straight, final_checkpoint, make_dataset, tiny_args, weights_found

from ganforge import checkpoint
from ganforge.cli import main
from ganforge.config import Config
from ganforge.config.describe import describe_derived
from ganforge.errors import UserError
from ganforge.metrics import compute_metric
from ganforge.nets.configured import make_networks
from ganforge.snapshot import load_snapshot
from ganforge.train.options import TrainOptions
from ganforge.train.resolver import DatasetFacts, Facts, resolve
from ganforge.train.schedules import stage_at, stage_starts


def _resolve(preset: str = "tiny", found=None, **given) -> Config:
    options = TrainOptions(data="/data/d.zip", outdir="/nonexistent/runs", preset=preset, **given)
    facts = Facts(DatasetFacts(resolution=32, channels=3, label_dim=0, name="d"), 1, "cpu", found=found)
    return resolve(options, facts)


def _problems(preset: str = "tiny", **given) -> list[str]:
    with pytest.raises(UserError) as caught:
        _resolve(preset, **given)
    return caught.value.problems


def test_grow_builds_growing_networks_and_its_schedule_with_a_whole_number_of_batches():
    cfg = _resolve(grow=True, grow_from=16, grow_kimg=0.1)
    G, D = make_networks(cfg)
    assert G.config["progressive"] is D.config["progressive"] is True
    assert cfg.schedule.grow_kimg == 0.112  # 7 batches of 16
    assert ("growth: from 16 px to 32 px, 0.112 kimg at each resolution and 0.112 kimg per fade; fully grown at "
            "0.224 kimg; batch 16 at every stage") in describe_derived(cfg)  # fmt: skip
    stages = [stage_at(cfg.model, cfg.schedule, 32, nimg) for nimg in (0, 96, 112, 160, 224)]
    assert stages == [(16, 1.0), (16, 1.0), (32, 0.0), (32, 48 / 112), (32, 1.0)]
    assert [nimg for nimg in range(0, 400, 16) if stage_starts(cfg.model, cfg.schedule, 32, nimg)] == [112, 224]
    plain = _resolve()
    assert not plain.model.grow and "progressive" not in make_networks(plain)[0].config
    assert stage_at(plain.model, plain.schedule, 32, 10**6) == (32, 1.0)


def test_growth_where_the_networks_cannot_grow_is_refused_with_the_fix():
    assert _problems(grow=True, grow_from=32) == [
        "--grow-from 32: growth starts at a resolution of the network's blocks below the data's 32: 8, 16"
    ]
    assert _problems("tiny3", grow=True) == [
        "--grow: grows StyleGAN2's G and D; the stylegan3-t generator does not grow; drop --grow or pass a StyleGAN2 "
        "--cfg"
    ]
    assert _problems(grow_kimg=10) == ["--grow-kimg: set the schedule of --grow; add --grow, or drop --grow-kimg"]
    assert _problems(grow=True, compile=True) == [
        "--compile: a growing network changes at every step of a fade, which would compile it again each step; drop "
        "--compile with --grow"
    ]
    found = weights_found("/w/net.safetensors", _resolve())
    assert _problems(found=found, grow=True) == [
        "--grow: progressive growing trains from scratch (Karras et al. 2018), while /w/net.safetensors is trained; "
        "drop --grow to fine-tune it"
    ]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("growth") / "squares", res=16)


def _snapshot_stage(path) -> list | None:
    with safetensors.safe_open(str(path), "pt") as file:
        return json.loads(file.metadata()["generator"]).get("stage")


def test_a_run_grows_through_a_fade_and_a_stop_in_the_middle_of_it_continues_bitwise(data, tmp_path):
    """8 images a step, 24-image periods: 8 px for steps 0-16, 16 px fading in at 0, 1/3 and 2/3 for steps 24-40,
    16 px from step 48; stopped at 32 (mid-fade) and continued to 56."""

    def train(outdir, kimg: float):
        args = tiny_args(data, outdir, kimg=kimg, batch=8, grow=True, grow_kimg=0.024)
        result = CliRunner().invoke(main, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output

    final = continued_equals_straight(train, tmp_path, 0.056, stop_kimg=0.032)
    (run,) = (tmp_path / "straight").iterdir()
    log = (run / "log.txt").read_text()
    assert "network-snapshot-000000.016.safetensors (grown to 8 px)" in log
    assert "network-snapshot-000000.048.safetensors (grown to 16 px, fading in at 0.67)" in log
    assert "network-snapshot-000000.056.safetensors\n" in log  # fully grown: no stage to say
    mid_fade = run / "snapshots/network-snapshot-000000.048.safetensors"
    assert _snapshot_stage(mid_fade) == [16, 2 / 3]
    assert _snapshot_stage(run / "snapshots/network-snapshot-000000.056.safetensors") is None
    G, _ = load_snapshot(mid_fade)
    assert G(torch.zeros(2, G.z_dim), None).shape == (2, 1, 16, 16)
    record = compute_metric("swd16k", generator=G, real=str(data), num_gen=32, cache_dir=tmp_path / "cache",
                            progress=False)  # fmt: skip
    assert record["stage"] == [16, 2 / 3]  # a metric of a growing generator says at which stage it was taken
    state = checkpoint.load(final)
    # Adam reset where the fade ended (the step at 48): D has stepped once since; G's new toRGB trained meanwhile
    assert {entry["step"].item() for entry in state["opt_D"]["state"].values()} == {1.0}
    assert not state["G"]["synthesis.b16.torgb.weight"].equal(state["G_ema"]["synthesis.b16.torgb.weight"])


def test_a_grown_snapshot_fine_tunes_without_its_growth_layers_and_a_half_grown_one_is_refused(data, tmp_path):
    args = tiny_args(data, tmp_path / "grow", kimg=0.032, batch=8, grow=True, grow_kimg=0.008, g_arch="orig",
                     d_arch="orig")  # fmt: skip
    assert CliRunner().invoke(main, args, catch_exceptions=False).exit_code == 0
    (run,) = (tmp_path / "grow").iterdir()
    grown, half = (
        run / "snapshots/network-snapshot-000000.032.safetensors",
        run / "snapshots/network-snapshot-000000.016.safetensors",
    )
    assert _snapshot_stage(half) == [16, 0.0] and _snapshot_stage(grown) is None
    tune = tiny_args(data, tmp_path / "tune", kimg=0.008, batch=8, resume=grown)
    result = CliRunner().invoke(main, tune, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    tuned = checkpoint.load(final_checkpoint(tmp_path / "tune"))
    assert "synthesis.b16.torgb.weight" in tuned["G"] and "synthesis.b8.torgb.weight" not in tuned["G"]
    assert "b16.fromrgb.weight" in tuned["D"] and "b8.fromrgb.weight" not in tuned["D"]
    result = CliRunner().invoke(main, tiny_args(data, tmp_path / "half", kimg=0.008, batch=8, resume=half))
    assert result.exit_code == 2
    assert (f"--resume {half}: saved while growing (at 16 px, fading in at 0.00), so its higher resolutions are "
            "untrained") in result.output  # fmt: skip
