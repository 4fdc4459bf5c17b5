"""R3GAN's training: the RpGAN losses and both gradient penalties against slow, obvious implementations; the phases
that use them (R2 on fakes, each fake paired with its own real); the annealed schedules at hand-computed points; and
`--cfg tiny-r3gan` end to end: the CLI trains and resumes bitwise (two ranks against one: test_train_two_ranks.py);
and the dry run's `parameters:` line for every family."""

import json
import math
import re
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner
from train_helpers import continued_equals_straight, make_dataset, tiny_options

from distinct_helpers import assert_distinct, perturb
from ganforge import checkpoint
from ganforge.cli import main
from ganforge.config.describe import describe_derived
from ganforge.errors import UserError
from ganforge.nets.configured import make_networks
from ganforge.presets import PRESETS
from ganforge.train import loop, relativistic, run
from ganforge.train import loss as L
from ganforge.train.build import build
from ganforge.train.options import TrainOptions
from ganforge.train.phases import micro_batches
from ganforge.train.resolver import DatasetFacts, Facts, resolve
from ganforge.train.schedules import annealed, augment_p_at, beta2_at, ema_kimg_at, gamma_at, plan_step

R3 = ["--cfg", "tiny-r3gan", "--batch", "4", "--tick", "0.008", "--snap", "1", "--workers", "0", "--device", "cpu",
      "--no-report"]  # fmt: skip


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("train_r3gan") / "squares", count=8)


def _sigmoid_nll(t: float) -> float:
    """-log(sigmoid(t)), written out."""
    return -math.log(1 / (1 + math.exp(-t)))


def test_relativistic_losses_are_the_negative_log_sigmoid_of_each_pairs_difference():
    real, fake = torch.tensor([[1.5], [-0.25], [3.0]]), torch.tensor([[0.5], [0.75], [-2.0]])
    d, g = L.d_relativistic(real, fake), L.g_relativistic(fake, real)
    for i in range(3):
        r, f = real[i].item(), fake[i].item()
        assert d[i].item() == pytest.approx(_sigmoid_nll(r - f), rel=1e-6)  # D: the real above its fake
        assert g[i].item() == pytest.approx(_sigmoid_nll(f - r), rel=1e-6)  # G: the fake above its real


def _tiny_d():
    from ganforge.nets import R3GANDiscriminator

    torch.manual_seed(0)
    D = R3GANDiscriminator(resolution=8, img_channels=1, c_dim=0, widths=[8, 4], cardinalities=[2, 1], blocks=[1, 1],
                           embed_dim=0)  # fmt: skip
    return perturb(D)  # off the fix-up start, where the last convolution of each block is 0


def _input_gradients(D, images: torch.Tensor, c) -> torch.Tensor:
    """grad_x D(x) of each image alone, [N, C, H, W]."""
    grads = []
    for i in range(len(images)):
        image = images[i : i + 1].clone().requires_grad_(True)
        grads.append(torch.autograd.grad(D(image, None if c is None else c[i : i + 1]).sum(), image)[0][0])
    return torch.stack(grads)


def test_one_backward_gives_each_image_its_own_zero_centred_penalty():
    """R1 on reals and R2 on fakes from one autograd call equal gamma/2 ||grad D(x)||^2 of each image alone."""
    D, gamma = _tiny_d(), 0.7
    reals, fakes = torch.randn(3, 1, 8, 8), torch.randn(3, 1, 8, 8)
    x, y = reals.clone().requires_grad_(True), fakes.clone().requires_grad_(True)
    r1, r2 = L.zero_centred_penalties((D(x, None), D(y, None)), (x, y), gamma)
    expected = gamma / 2 * _input_gradients(D, torch.cat([reals, fakes]), None).square().flatten(1).sum(1)
    assert_distinct(expected, "each image's penalty")  # so that a penalty of another image cannot pass for it
    torch.testing.assert_close(torch.cat([r1, r2]).detach(), expected, rtol=1e-5, atol=0)


def _trainer(data: Path, tmp_path: Path, **extra):
    cfg = resolve(tiny_options(data, tmp_path, preset="tiny-r3gan", batch=4, **extra))
    return cfg, build(cfg, torch.device("cpu"))


def test_d_phase_is_rpgan_with_r1_on_reals_and_r2_on_fakes_and_g_phase_pairs_each_fake_with_its_real(data, tmp_path):
    """Each image's terms against D on that image alone. At R3GAN's fix-up start every image has the same input
    gradient (so R2 on reals would pass for R2 on fakes): D is moved off it, and the values are checked to differ."""
    cfg, (trainer, phases, _) = _trainer(data, tmp_path)
    assert [p.name for p in phases] == ["D_main", "G_main"] and cfg.augment.mode == "noaug"
    perturb(trainer.D)
    reals = torch.rand(4, 1, 8, 8) * 2 - 1
    (mb,) = micro_batches(cfg, plan_step(cfg, 0, phases), 0, reals, torch.zeros(4, 0), trainer.G.num_ws)
    with torch.no_grad():
        fakes = trainer.G(mb.z, mb.c)  # R3GAN draws no noise: the phase's fakes are these
        d_real, d_fake = (trainer.D(x, mb.c).flatten() for x in (reals, fakes))
    slopes = _input_gradients(trainer.D, torch.cat([reals, fakes]), torch.cat([mb.c, mb.c]))
    assert_distinct(torch.cat([d_real, d_fake]), "D's logits of the reals and fakes")
    assert_distinct(slopes, "D's input gradients of the reals and fakes")
    r1, r2 = (mb.gamma / 2 * slopes.square().flatten(1).sum(1)).chunk(2)
    main = torch.tensor([_sigmoid_nll(t) for t in (d_real - d_fake).tolist()])
    total, stats = relativistic.d_main(trainer, mb)
    torch.testing.assert_close(stats["Loss/D/main"].detach(), main, rtol=1e-5, atol=0)
    torch.testing.assert_close(stats["Loss/D/r1"].detach(), r1, rtol=1e-4, atol=0)
    torch.testing.assert_close(stats["Loss/D/r2"].detach(), r2, rtol=1e-4, atol=0)
    torch.testing.assert_close(total.detach(), main + r1 + r2, rtol=1e-5, atol=0)
    loss, stats = relativistic.g_main(trainer, mb)
    expected = torch.tensor([_sigmoid_nll(t) for t in (d_fake - d_real).tolist()])
    torch.testing.assert_close(loss.detach(), expected, rtol=1e-5, atol=0)
    torch.testing.assert_close(stats["Scores/fake"].detach().flatten(), d_fake, rtol=1e-5, atol=1e-6)
    assert mb.gamma == cfg.loss.gamma  # at 0 images, the start of the annealing


def test_d_then_g_train_at_every_step_with_adams_of_the_configured_rates_and_betas(data, tmp_path, monkeypatch):
    """No lazy regularisation: D main (with both penalties), then G main, at every step; each network's Adam is built
    at its --dlr / --glr and the configured betas, without the lazy-regularisation correction."""
    cfg, (_, phases, _) = _trainer(data, tmp_path)
    for phase, lr in zip(phases, (cfg.optim.d_lr, cfg.optim.g_lr), strict=True):
        group = phase.network.opt.param_groups[0]
        assert (phase.lr, group["lr"], group["betas"]) == (lr, lr, (cfg.optim.beta1, cfg.optim.beta2)), phase.name
    ran, run_phase = [], loop.run_phase

    def record(trainer, phase, index, plan, mbs):
        ran.append((phase.name, plan.cur_nimg))
        return run_phase(trainer, phase, index, plan, mbs)

    monkeypatch.setattr(loop, "run_phase", record)
    assert run(resolve(tiny_options(data, tmp_path / "run", preset="tiny-r3gan", batch=4, kimg=0.012))) == 0
    assert ran == [(name, n) for n in (0, 4, 8) for name in ("D_main", "G_main")]


def test_schedules_anneal_along_a_half_cosine_and_stay_at_the_end():
    assert annealed(0.9, 0.99, 0, 10) == pytest.approx(0.9)
    assert annealed(0.9, 0.99, 2500, 10) == pytest.approx(0.99 - 0.09 * (1 + math.sqrt(0.5)) / 2)  # cos(pi/4)
    assert annealed(0.9, 0.99, 5000, 10) == pytest.approx(0.945)
    assert annealed(0.9, 0.99, 10000, 10) == pytest.approx(0.99)
    assert annealed(0.9, 0.99, 30000, 10) == pytest.approx(0.99)


def test_the_released_schedules_are_annealed_from_the_presets_start_to_end_values():
    options = TrainOptions(data="/data/cifar10.zip", outdir="/nonexistent/runs", preset="r3gan-cifar10")
    cfg = resolve(options, Facts(DatasetFacts(resolution=32, channels=3, label_dim=0, name="cifar10"), 1, "cpu"))
    s, half = cfg.schedule, round(cfg.schedule.anneal_kimg * 500)
    assert (s.anneal_kimg, s.batch, cfg.augment.mode, cfg.augment.pipe) == (20000, 512, "fixed", "bgcc")
    assert gamma_at(cfg.loss, s, 0) == pytest.approx(0.05) and gamma_at(cfg.loss, s, half) == pytest.approx(0.0275)
    assert gamma_at(cfg.loss, s, 10**9) == pytest.approx(0.005)
    assert beta2_at(cfg.optim, s, 0) == pytest.approx(0.9) and beta2_at(cfg.optim, s, 10**9) == pytest.approx(0.99)
    assert ema_kimg_at(s, 0) == 0 and ema_kimg_at(s, half) == pytest.approx(2500)
    assert augment_p_at(cfg.augment, s, 0) == 0 and augment_p_at(cfg.augment, s, half) == pytest.approx(0.275)
    assert cfg.optim.lr_schedule == "cosine" and cfg.optim.lr_horizon_kimg == s.anneal_kimg
    assert cfg.optim.lr_min_ratio * cfg.optim.g_lr == pytest.approx(5e-5)
    assert PRESETS["r3gan-imagenet64"].anneal_kimg == 200000 and PRESETS["r3gan-ffhq256"].gamma == 150


def _train(data: Path, outdir: Path, kimg: float, *extra: str) -> None:
    args = ["train", "--data", str(data), "--outdir", str(outdir), "--kimg", f"{kimg:g}", *R3, *extra]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output


def test_tiny_r3gan_trains_through_the_cli_and_a_stopped_run_continues_bitwise(data, tmp_path):
    resumed = continued_equals_straight(lambda outdir, kimg: _train(data, outdir, kimg), tmp_path, 0.016)
    (run,) = (tmp_path / "stopped").iterdir()
    state = checkpoint.load(resumed)
    assert state["opt_D"]["param_groups"][0]["betas"][1] > 0.9  # beta2 annealed past its start
    # the EMA half-life anneals from 0 and is still ~2e-4 images at the last step: G_ema is G (as released, and
    # unlike a constant 1 kimg half-life)
    assert all(torch.equal(state["G"][k], state["G_ema"][k]) for k in state["G"])
    records = [json.loads(line) for line in (run / "stats.jsonl").read_text().splitlines()]
    assert {"Loss/D/r1", "Loss/D/r2", "Loss/G/main"} <= set(records[-1])
    assert 0 < records[-1]["Aug/p"] < 0.2 * 1e-4  # annealed from 0 towards the preset's 0.2 over 40 kimg


def test_dry_run_prints_the_parameter_counts_of_every_family(data, tmp_path):
    for preset in ("tiny", "tiny3", "tiny-r3gan"):
        args = ["train", "--data", str(data), "--outdir", str(tmp_path / "runs"), "--cfg", preset, "--dry-run"]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        (line,) = [line for line in result.stderr.splitlines() if line.startswith("parameters:")]
        counts = [int(n.replace(",", "")) for n in re.fullmatch(r"parameters: G ([\d,]+), D ([\d,]+)", line).groups()]
        G, D = make_networks(resolve(TrainOptions(data=str(data), outdir=str(tmp_path / "runs"), preset=preset)))
        assert counts == [sum(p.numel() for p in G.parameters()), sum(p.numel() for p in D.parameters())]


def test_cbase_and_cmax_set_the_widths_and_widths_that_cannot_be_built_are_refused_in_one_line(data, tmp_path):
    """--cbase/--cmax (as the official train.py's) give R3GAN's stages min(cbase / res, cmax) channels in groups of
    8; a width the groups do not divide, a layer without channels, or a StyleGAN layer wider than its files allow
    is refused before anything is built, naming the fix."""
    cfg = resolve(tiny_options(data, tmp_path, preset="tiny-r3gan", cbase=256, cmax=48))
    G, D = make_networks(cfg)
    assert G.config["widths"] == D.config["widths"] == [48, 32]  # 4x4: min(256 / 4, 48); 8x8: 256 / 8
    assert G.config["cardinalities"] == [6, 4]
    assert G(torch.randn([2, G.z_dim]), None).shape == (2, 1, 8, 8)
    base = ["train", "--data", str(data), "--outdir", str(tmp_path / "runs"), "--dry-run"]
    refused = {
        ("--cfg", "tiny-r3gan", "--cbase", "100"): (
            "--cbase 100, --cmax 64: R3GAN splits each stage into groups of 8 channels, which do not divide the "
            "widths 25 at 4x4; use a --cbase that is a multiple of 64 (e.g. 128) and a --cmax that is a multiple of 8"
        ),
        ("--cfg", "tiny", "--cbase", "4"): (
            "--cbase 4: leaves no channels at 8x8 (a layer at resolution r has min(cbase / r, cmax) channels); use at "
            "least 8"
        ),
        ("--cfg", "tiny", "--cmax", "2000"): "--cmax 2000: StyleGAN2's layers have at most 1024 channels",
    }
    for args, message in refused.items():
        result = CliRunner().invoke(main, [*base, *args])
        assert (result.exit_code, result.stderr) == (2, f"error: {message}\n"), args
    assert not (tmp_path / "runs").exists()


def test_an_r3gan_run_is_used_by_generate_export_metrics_report_and_bench(data, tmp_path):
    """The commands after training take an R3GAN run as they take a StyleGAN one; generate says why it has no
    truncation."""
    _train(data, tmp_path / "runs", 0.008)
    (run,) = (tmp_path / "runs").iterdir()
    snapshot = str(sorted((run / "snapshots").iterdir())[-1])
    commands = {
        "generate": ["generate", "--network", snapshot, "--seeds", "0-3", "--grid", "2x2", "--outdir", str(tmp_path)],
        "export": ["export", "--network", snapshot, "--format", "pt2", "--out", str(tmp_path / "G.pt2"),
                   "--check", "8", "--max-fid-delta", "1000"],
        "metrics": ["metrics", "--network", snapshot, "--data", str(data), "--metrics", "swd16k", "--num-gen", "8",
                    "--device", "cpu", "--workers", "0", "--cache", str(tmp_path / "cache")],
        "report": ["report", str(run)],
        "bench": ["bench", "--cfg", "tiny-r3gan", "--resolution", "8", "--channels", "1", "--steps", "1", "--warmup",
                  "0", "--repeat", "1", "--device", "cpu", "--aug", "noaug"],
    }  # fmt: skip
    for name, args in commands.items():
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, (name, result.output)
    assert (tmp_path / "grid.png").is_file() and (tmp_path / "G.pt2").is_file() and (run / "report.html").is_file()
    assert json.loads((run / "metric-swd16k.jsonl").read_text())["num_fake"] == 8
    result = CliRunner().invoke(main, [*commands["generate"], "--trunc", "0.5"])
    assert result.exit_code == 2 and "R3GAN generator, which has no mapping network" in result.stderr


def test_bf16_runs_the_top_stages_in_bfloat16_as_released_without_autocast(data, tmp_path):
    cfg, (trainer, _, _) = _trainer(data, tmp_path, precision="bf16")
    assert (cfg.precision.fp16_res, cfg.precision.conv_clamp, trainer.precision.dtype) == (2, None, None)
    assert [s.reduced for s in trainer.G.synthesis.stages] == [True, True]  # 8 px: both stages are the top 2
    assert "bf16: the top 2 stage(s) of G and D compute in bfloat16" in "\n".join(describe_derived(cfg))
    fp32 = resolve(tiny_options(data, tmp_path, preset="tiny-r3gan", batch=4, precision="fp32"))
    assert fp32.precision.fp16_res == 0
    with pytest.raises(UserError, match="R3GAN's reduced-precision stages are bfloat16"):
        resolve(tiny_options(data, tmp_path, preset="tiny-r3gan", batch=4, precision="fp32", fp16_res=2))
    _train(data, tmp_path / "bf16", 0.004, "--precision", "bf16")
    (run,) = (tmp_path / "bf16").iterdir()
    record = json.loads((run / "stats.jsonl").read_text().splitlines()[-1])
    assert record["Skipped/D_main"] == record["Skipped/G_main"] == 0 and math.isfinite(record["Loss/D/main"])
