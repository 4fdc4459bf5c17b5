"""Training controls: learning-rate schedules, two-phase training and gradient clipping, against values worked out by
hand, through one real run (and its resume across a schedule boundary), and in the configuration."""

import json
import math
from pathlib import Path

import pytest
import torch
from train_helpers import make_dataset, tiny_options

from ganforge import checkpoint
from ganforge.config import OptimConfig, ScheduleConfig, config_hash, maths_differences, maths_fields
from ganforge.errors import UserError
from ganforge.train import resolve, run
from ganforge.train.build import build_networks
from ganforge.train.schedules import lr_factor, phase_due

STEP = 0.008  # one batch of 8 images


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("train_controls") / "squares")


def _optim(**fields) -> OptimConfig:
    return OptimConfig(g_lr=0.002, d_lr=0.002, **fields)


def test_warmup_is_linear_from_zero_then_flat():
    o = _optim(lr_warmup_kimg=4)
    assert [lr_factor(o, n) for n in (0, 1000, 2000, 4000, 9000)] == [0.0, 0.25, 0.5, 1.0, 1.0]
    assert [lr_factor(_optim(lr_warmup_kimg=0.001), n) for n in (0, 1)] == [0.0, 1.0]  # a warm-up of one image


def test_cosine_end_points_and_midpoint_after_warmup():
    """SGDR Eq. 5 with eta_max = 1, eta_min = 0.1: 1 where the decay starts, 0.55 half way, 0.1 at the end."""
    o = _optim(lr_schedule="cosine", lr_warmup_kimg=2, lr_min_ratio=0.1, lr_horizon_kimg=10)
    assert lr_factor(o, 1000) == pytest.approx(0.5)  # still warming up: 1/2 of a cosine factor of 1
    assert lr_factor(o, 2000) == pytest.approx(1.0)
    assert lr_factor(o, 6000) == pytest.approx(0.55)
    assert lr_factor(o, 4000) == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi / 4)))
    assert lr_factor(o, 10000) == pytest.approx(0.1) and lr_factor(o, 50000) == pytest.approx(0.1)


def test_step_schedule_multiplies_at_each_boundary():
    o = _optim(lr_schedule="step", lr_steps=(1.0, 3.0), lr_gamma=0.5)
    assert [lr_factor(o, n) for n in (0, 999, 1000, 2999, 3000, 8000)] == [1, 1, 0.5, 0.5, 0.25, 0.25]


def test_d_warmup_and_d_steps_choose_the_phases_by_image_count():
    """Batch 8, D alone for 16 images (2 steps), then G every 2nd step; G's regulariser every 2nd G step."""
    s = ScheduleConfig(batch=8, batch_gpu=8, kimg=1, tick_kimg=1, snap=1, ema_kimg=1, ema_rampup=None,
                       d_warmup_kimg=0.016, d_steps=2)  # fmt: skip
    steps = range(9)
    assert [k for k in steps if phase_due(s, "G", 1, 8 * k)] == [2, 4, 6, 8]
    assert [k for k in steps if phase_due(s, "G", 2, 8 * k)] == [2, 6]
    assert [k for k in steps if phase_due(s, "D", 1, 8 * k)] == list(steps)
    assert [k for k in steps if phase_due(s, "D", 4, 8 * k)] == [0, 4, 8]
    one = ScheduleConfig(batch=1, batch_gpu=1, kimg=1, tick_kimg=1, snap=1, ema_kimg=1, ema_rampup=None,
                         d_warmup_kimg=0.002, d_steps=1)  # fmt: skip
    assert [n for n in range(5) if phase_due(one, "G", 1, n)] == [2, 3, 4]  # not at 1 image, the warm-up's last
    long = ScheduleConfig(batch=8, batch_gpu=8, kimg=2, tick_kimg=1, snap=1, ema_kimg=1, ema_rampup=None,
                          d_warmup_kimg=1.0, d_steps=1)  # fmt: skip
    assert [n for n in (992, 1000, 1008) if phase_due(long, "G", 1, n)] == [1000, 1008]  # 1 kimg: 1000 images


def _controls_options(data, outdir, steps: int, **extra) -> dict:
    """4 steps of 8 images: D alone for the first two, then G every second step (at 16 images only); lr ramps over
    two steps, then halves at 24 images; D's gradient clipped to a norm it always exceeds."""
    return tiny_options(data, outdir, kimg=steps * STEP, tick=STEP, keep_last=5, d_warmup_kimg=2 * STEP, d_steps=2,
                        lr_schedule="step", lr_warmup_kimg=2 * STEP, lr_steps=f"{3 * STEP:g}", lr_gamma=0.5,
                        clip_grad_d=1e-4, **extra)  # fmt: skip


@pytest.fixture(scope="module")
def controls_run(data, tmp_path_factory):
    outdir = tmp_path_factory.mktemp("controls_run")
    cfg = resolve(_controls_options(data, outdir, 4))
    assert run(cfg) == 0
    (run_dir,) = Path(outdir).iterdir()
    return cfg, run_dir


def test_g_is_bitwise_untouched_during_d_warmup_and_trains_after(controls_run):
    cfg, run_dir = controls_run
    G0, _ = build_networks(cfg, torch.device("cpu"))
    at = {n: checkpoint.load(run_dir / "checkpoints" / f"ckpt-{n:09d}") for n in (0, 16, 24)}
    for name, value in G0.state_dict().items():
        assert torch.equal(at[16]["G"][name], value), name
    assert any(not torch.equal(at[24]["G"][k], v) for k, v in G0.state_dict().items())
    assert any(not torch.equal(at[16]["D"][k], v) for k, v in at[0]["D"].items())


def test_tick_stats_report_scheduled_rates_and_clipping(controls_run):
    _, run_dir = controls_run
    ticks = [json.loads(line) for line in (run_dir / "stats.jsonl").read_text().splitlines()]
    assert [t["kimg"] for t in ticks] == [0.008, 0.016, 0.024, 0.032]
    d_base, g_base = 0.0025 * 16 / 17, 0.0025 * 4 / 5  # tiny's rate with the lazy-regularisation correction
    assert [t["LR/D_main"] for t in ticks] == pytest.approx([0, d_base / 2, d_base, d_base / 2])
    assert [t.get("LR/G_main") for t in ticks] == [None, None, pytest.approx(g_base), None]
    assert [t.get("LR/G_reg") for t in ticks] == [None, None, pytest.approx(g_base), None]
    assert all(t["Clipped/D_main"] == 1 and t["GradNorm/D_main"] > 1e-4 for t in ticks)
    assert all("Clipped/G_main" not in t for t in ticks)


def test_resume_across_the_schedule_boundaries_is_bitwise(controls_run, data, tmp_path):
    """Continue from 16 images (end of D's warm-up and of the lr ramp) to 32, past the lr step at 24."""
    _, run_dir = controls_run
    source = run_dir / "checkpoints" / "ckpt-000000016"
    assert run(resolve(_controls_options(data, tmp_path, 4, resume=str(source)))) == 0
    (resumed,) = tmp_path.iterdir()
    a = checkpoint.load(run_dir / "checkpoints" / "ckpt-000000032")
    b = checkpoint.load(resumed / "checkpoints" / "ckpt-000000032")
    for net in ("G", "D", "G_ema"):
        assert all(torch.equal(b[net][k], v) for k, v in a[net].items()), net
    for opt in ("opt_G", "opt_D"):
        for index, moments in a[opt]["state"].items():
            assert all(torch.equal(b[opt]["state"][index][k], v) for k, v in moments.items()), opt


def test_a_resume_that_turns_r1_off_takes_this_runs_adam_betas(controls_run, data, tmp_path):
    """The scheduled rate is set every step; betas and eps come from this run's configuration, not the checkpoint's:
    without R1, D's Adam has no lazy-regularisation correction."""
    _, run_dir = controls_run
    source = run_dir / "checkpoints" / "ckpt-000000024"
    options = _controls_options(data, tmp_path, 4, resume=str(source), gamma=0, allow_config_change=True)
    assert run(resolve(options)) == 0
    (resumed,) = tmp_path.iterdir()
    (group,) = checkpoint.load(resumed / "checkpoints" / "ckpt-000000032")["opt_D"]["param_groups"]
    assert tuple(group["betas"]) == (0.0, 0.99) and group["lr"] == pytest.approx(0.0025 / 2)


NEW_FIELDS = {  # option -> (value, the flattened config field it sets, the value stored)
    "lr_schedule": ("cosine", "optim.lr_schedule", "cosine"),
    "lr_warmup_kimg": (0.016, "optim.lr_warmup_kimg", 0.016),
    "lr_min_ratio": (0.1, "optim.lr_min_ratio", 0.1),
    "lr_gamma": (0.5, "optim.lr_gamma", 0.5),
    "clip_grad": (1.0, "optim.clip_grad_g", 1.0),
    "clip_grad_d": (0.5, "optim.clip_grad_d", 0.5),
    "d_warmup_kimg": (0.016, "schedule.d_warmup_kimg", 0.016),
    "d_steps": (2, "schedule.d_steps", 2),
    "aug": ("diffaug", "augment.mode", "diffaug"),
    "aug_pipe": ("bgcfnc", "augment.pipe", "bgcfnc"),
    "ada_interval": (8, "augment.ada_interval", 8),
    "diffaug_policy": ("color,cutout", "augment.diffaug_policy", "color,cutout"),
}


@pytest.mark.parametrize("option", NEW_FIELDS)
def test_each_control_is_a_maths_field_and_changes_the_hash(data, tmp_path, option):
    value, field, stored = NEW_FIELDS[option]
    base = resolve(tiny_options(data, tmp_path, kimg=0.064))
    cfg = resolve(tiny_options(data, tmp_path, kimg=0.064, **{option: value}))
    assert maths_fields(cfg.to_dict())[field] == stored
    assert config_hash(cfg) != config_hash(base)
    assert any(line.startswith(f"{field}:") for line in maths_differences(base.to_dict(), cfg.to_dict()))


def test_steps_fixed_p_and_cosine_horizon_are_recorded(data, tmp_path):
    cfg = resolve(tiny_options(data, tmp_path, kimg=0.064, lr_schedule="step", lr_steps="0.016,0.032"))
    assert maths_fields(cfg.to_dict())["optim.lr_steps"] == [0.016, 0.032]
    assert resolve(tiny_options(data, tmp_path, aug="fixed", aug_p=0.3)).augment.p == 0.3
    cosine = resolve(tiny_options(data, tmp_path, kimg=0.064, lr_schedule="cosine"))
    assert cosine.optim.lr_horizon_kimg == 0.064  # a longer --kimg on resume is a maths change


def test_a_checkpoint_from_before_the_controls_resumes_with_their_defaults(data, tmp_path):
    cfg = resolve(tiny_options(data, tmp_path))
    old = {k: v for k, v in maths_fields(cfg.to_dict()).items() if not k.startswith("optim.lr_")}
    assert maths_differences(old, cfg.to_dict()) == []
    changed = resolve(tiny_options(data, tmp_path, lr_schedule="cosine"))
    assert "optim.lr_schedule: 'constant' -> 'cosine'" in maths_differences(old, changed.to_dict())


def test_bad_controls_are_listed_at_once(data, tmp_path):
    with pytest.raises(UserError) as error:
        resolve(tiny_options(data, tmp_path, kimg=0.032, lr_schedule="step", lr_steps="0.012,x", lr_gamma=2,
                               d_warmup_kimg=0.032, d_steps=0, clip_grad_g=-1, aug_pipe="bg", aug_p=0.5,
                               diffaug_policy="color,blur"))  # fmt: skip
    text = "\n".join(error.value.problems)
    for flag in ("--lr-steps 0.012,x", "--lr-gamma 2", "--d-warmup-kimg 0.032", "--d-steps 0",
                 "--clip-grad-g -1: must be a positive gradient norm", "--aug-pipe bg",
                 "--aug-p: only used by --aug fixed", "--diffaug-policy color,blur"):  # fmt: skip
        assert flag in text, flag
    with pytest.raises(UserError, match=r"--lr-steps 0.009,0.01: must be positive and increasing kimg, at least one"):
        resolve(tiny_options(data, tmp_path, lr_schedule="step", lr_steps="0.009,0.01"))  # both round up to 0.016


def test_each_augment_mode_builds_what_d_sees_through(data, tmp_path):
    from ganforge.augment.diffaugment import DiffAugment
    from ganforge.augment.pipe import AugmentPipe
    from ganforge.train.build import build

    def built(**extra):
        t, _, _ = build(resolve(tiny_options(data, tmp_path, **extra)), torch.device("cpu"))
        return t.augment, t.ada

    augment, ada = built(aug="diffaug", diffaug_policy="translation,cutout")
    assert isinstance(augment, DiffAugment) and augment.ops == ("translation", "cutout") and ada is None
    augment, ada = built(aug="fixed", aug_p=0.25, aug_pipe="bgcfnc")
    assert isinstance(augment, AugmentPipe) and float(augment.p) == 0.25 and "cutout" in augment.ops and ada is None
    augment, ada = built(aug="ada", ada_interval=2)
    assert float(augment.p) == 0 and "cutout" not in augment.ops and ada.interval == 2
    assert built(aug="noaug") == (None, None)


def test_start_of_run_lines_describe_the_controls_and_the_layouts(data, tmp_path):
    from ganforge.config.describe import describe_derived

    cfg = resolve(tiny_options(data, tmp_path, kimg=0.064, lr_schedule="cosine", lr_min_ratio=0.1,
                                 lr_warmup_kimg=0.016, clip_grad_d=0.5, d_steps=2, aug="diffaug"))  # fmt: skip
    lines = describe_derived(cfg)
    for text in ("learning rate: cosine from the base rate to x0.1 at 0.064 kimg after a linear warm-up of 0.016",
                 "gradient clipping: D's global gradient norm capped at 0.5",
                 "phases: D alone for 0 kimg, then 2 D step(s) per G step",
                 "augmentation: DiffAugment color,translation,cutout"):  # fmt: skip
        assert any(line.startswith(text) for line in lines), text
    assert not any("G's global gradient" in line for line in lines)
    assert "layouts: G skip, D resnet" in lines
