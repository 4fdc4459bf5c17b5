"""StyleGAN3 training pieces against values written out by hand: the presets (Karras et al. 2021, App. D and the
released training setup), the blurred-discriminator warm-up, the magnitude_ema decay and where it is updated, and
starting from a snapshot whose precision settings differ."""

import copy
import dataclasses
import math

import pytest
import torch
from train_helpers import make_dataset, tiny_options, weights_found

from distinct_helpers import assert_distinct
from ganforge.augment.blur import blur_images, blur_kernel
from ganforge.config import maths_fields
from ganforge.errors import UserError
from ganforge.nets import StyleGAN3Generator
from ganforge.snapshot import save_snapshot
from ganforge.train import TrainOptions, resolve
from ganforge.train.build import build
from ganforge.train.checkpointing import check_config, load_pretrained
from ganforge.train.phases import micro_batches, run_phase
from ganforge.train.resolver import DatasetFacts, Facts
from ganforge.train.schedules import blur_sigma, magnitude_ema_beta, plan_step

DATASET_256 = DatasetFacts(resolution=256, channels=3, label_dim=0, name="faces")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("train_sg3") / "squares", count=8)


def _resolve(preset: str, device_type: str = "cpu", dataset=DATASET_256, world_size: int = 1, **options):
    options = TrainOptions(data="faces", outdir="runs", preset=preset, **options)
    facts = Facts(dataset, world_size, device_type)
    if (options.resume or "").endswith(".safetensors"):  # pretrained files of the preset's own architecture
        from_scratch = resolve(dataclasses.replace(options, resume=None), facts)
        facts = dataclasses.replace(facts, found=weights_found(options.resume, from_scratch))
    return resolve(options, facts)


@pytest.mark.parametrize("name", ["stylegan3-t", "stylegan3-r"])
def test_presets_follow_the_released_stylegan3_setup_at_256(name):
    cfg = _resolve(name)
    m, lo, o, s = cfg.model, cfg.loss, cfg.optim, cfg.schedule
    assert m.generator == name and m.synthesis_layers == 14 and m.mapping_layers == 2
    assert (o.g_lr, o.d_lr) == (0.0025, 0.002)
    assert lo.pl_weight == 0 and lo.style_mixing == 0
    # the `auto` derivation at 256x256: batch min(4096 / 256, 32) = 16, channel base 16384; gamma 0.001 * 256^2 / 16
    # (5x ADA's: at batch 32 the released recommendation of 2 at 256x256)
    assert s.batch == 16 and m.mbstd_group == 4 and m.channel_base == 16384 and m.channel_max == 512
    assert lo.gamma == pytest.approx(4.096) and s.ema_kimg == 5.0 and s.ema_rampup == 0.05
    assert (cfg.precision.fp16_res, cfg.precision.conv_clamp) == (0, None)  # fp32 by default
    assert (lo.blur_sigma, lo.blur_fade_kimg) == ((10.0, 100.0) if name == "stylegan3-r" else (0.0, 0.0))


def test_stylegan3_schedules_follow_the_batch_actually_used_and_fp16_uses_the_per_layer_recipe():
    r = _resolve("stylegan3-r", batch=32)
    assert r.schedule.ema_kimg == 10.0 and r.loss.blur_fade_kimg == 200.0  # batch x 10 / 32, 200 x batch / 32
    assert _resolve("auto", batch=32).schedule.ema_kimg == 5.0  # ADA's auto keeps the half-life of its own batch
    assert _resolve("auto").loss.gamma == pytest.approx(0.8192)  # ADA's heuristic, 0.0002 * 256^2 / 16
    fine_tune = _resolve("stylegan3-r", resume="sg3-r.safetensors,d.safetensors").loss
    assert (fine_tune.blur_sigma, fine_tune.blur_fade_kimg) == (0.0, 0.0)  # starting from weights: no warm-up
    assert _resolve("stylegan3-r", resume="runs/00000/checkpoints/ckpt-000001000").loss.blur_sigma == 10.0
    ffhq = DatasetFacts(resolution=1024, channels=3, label_dim=0, name="ffhq")
    assert _resolve("stylegan3-t", dataset=ffhq, world_size=8).loss.gamma == pytest.approx(32.768)
    fp16 = _resolve("stylegan3-t", "cuda", precision="fp16")
    assert (fp16.precision.fp16_res, fp16.precision.conv_clamp) == (4, 256)
    assert _resolve("stylegan3-t", "cuda", precision="fp16", fp16_res=2).precision.fp16_res == 2
    assert _resolve("stylegan2", "cuda", precision="fp16").precision.fp16_res == 0  # autocast, as before


def test_tiny3_dry_run_through_the_cli(data, tmp_path):
    from click.testing import CliRunner

    from ganforge.cli import main

    args = ["train", "--data", str(data), "--outdir", str(tmp_path), "--cfg", "tiny3", "--dry-run", "--device", "cpu"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert '"generator": "stylegan3-t"' in result.output and '"synthesis_layers": 4' in result.output
    assert '"pl_weight": 0.0' in result.output and '"d_lr": 0.002' in result.output


def test_blur_sigma_fades_linearly_to_zero():
    # sigma 10 over 100 kimg (R at batch 16): 10 * (1 - n / 100000), then 0
    assert [blur_sigma(n, 10.0, 100.0) for n in (0, 25_000, 50_000, 99_000, 100_000, 150_000)] == pytest.approx(
        [10.0, 7.5, 5.0, 0.1, 0.0, 0.0]
    )
    assert blur_sigma(0, 0.0, 100.0) == 0.0 and blur_sigma(0, 10.0, 0.0) == 0.0  # configs without the warm-up
    assert blur_sigma(500, 0.5, 1.0) == 0.25  # a blur narrower than a pixel fades too


def test_blur_kernel_taps_by_hand():
    # sigma 1: offsets -3..3 (floor(3 sigma)), weights 2^-(x^2) = 1/512, 1/16, 1/2, 1, ...; sum 2.12890625
    expected = torch.tensor([1 / 512, 1 / 16, 1 / 2, 1, 1 / 2, 1 / 16, 1 / 512]) / 2.12890625
    torch.testing.assert_close(blur_kernel(1.0), expected.float(), rtol=0, atol=1e-7)
    assert len(blur_kernel(7.5)) == 2 * 22 + 1 and len(blur_kernel(0.3)) == 1
    # sigma 0.5, the smallest radius: offsets -1..1, weights 2^-((x / 0.5)^2) = 1/16, 1, 1/16 (sigma 1 hid x * sigma)
    expected = torch.tensor([1 / 16, 1, 1 / 16]) / (1 + 2 / 16)
    torch.testing.assert_close(blur_kernel(0.5), expected.float(), rtol=0, atol=1e-7)


def _blur_reference(images: torch.Tensor, sigma: float) -> torch.Tensor:
    """Every output pixel as the explicit sum over the 2-D kernel (outer product of the taps), zeros outside."""
    taps = blur_kernel(sigma).double()
    radius = len(taps) // 2
    n, c, h, w = images.shape
    out = torch.zeros(n, c, h, w, dtype=torch.float64)
    for y in range(h):
        for x in range(w):
            for dy in range(-radius, radius + 1):
                for dx in range(-radius, radius + 1):
                    if 0 <= y + dy < h and 0 <= x + dx < w:
                        out[:, :, y, x] += taps[dy + radius] * taps[dx + radius] * images[:, :, y + dy, x + dx]
    return out


@pytest.mark.parametrize("sigma", [0.7, 2.0])  # radius 2, and radius 6 reaching past the 5-pixel-high image
def test_blur_images_equals_the_direct_2d_convolution(sigma):
    images = torch.randn(2, 3, 5, 6, dtype=torch.float64)
    torch.testing.assert_close(blur_images(images, sigma), _blur_reference(images, sigma))
    assert blur_images(images, 0.2) is images


def test_magnitude_ema_decays_by_half_every_20_kimg_per_step_whatever_the_accumulation():
    assert magnitude_ema_beta(32, 1) == pytest.approx(0.9988915792636801, abs=1e-15)  # 0.5 ** (32 / 20000)
    assert magnitude_ema_beta(32, 4) ** 4 == pytest.approx(magnitude_ema_beta(32, 1), abs=1e-15)
    assert magnitude_ema_beta(20_000, 1) == 0.5


def _tiny3(data, tmp_path, **loss):
    cfg = resolve(tiny_options(data, tmp_path, preset="tiny3", batch=4, kimg=0.004, tick=0.004))
    cfg = dataclasses.replace(cfg, loss=dataclasses.replace(cfg.loss, **loss))
    t, phases, G_ema = build(cfg, torch.device("cpu"))
    images = torch.rand([4, 1, 8, 8], generator=torch.Generator().manual_seed(3)) * 2 - 1
    return cfg, t, phases, images


def _run(cfg, t, phases, images, name: str):
    index = [p.name for p in phases].index(name)
    plan = plan_step(cfg, 0, phases)
    (mb,) = micro_batches(cfg, plan, index, images, torch.zeros([4, 0]), t.G.num_ws)
    run_phase(t, phases[index], index, plan, [mb])


def test_magnitude_ema_is_updated_in_g_main_only_with_the_input_mean_square(data, tmp_path):
    cfg, t, phases, images = _tiny3(data, tmp_path)
    assert t.magnitude_beta == magnitude_ema_beta(4, 1)
    layer = t.G.synthesis.L0_28_16
    inputs = []
    layer.register_forward_pre_hook(lambda module, args: inputs.append(args[0].detach().clone()))
    _run(cfg, t, phases, images, "D_main")
    assert layer.magnitude_ema.item() == 1.0 and len(inputs) == 1  # D main generates fakes but tracks nothing
    _run(cfg, t, phases, images, "G_main")
    expected = inputs[-1].square().mean().lerp(torch.tensor(1.0), t.magnitude_beta)
    assert layer.magnitude_ema.item() == pytest.approx(expected.item(), rel=1e-6) and expected.item() != 1.0
    t.G.eval()
    _run(cfg, t, phases, images, "G_main")
    assert layer.magnitude_ema.item() == pytest.approx(expected.item(), rel=1e-6)  # not outside training mode


@pytest.mark.parametrize("name", ["G_main", "D_main", "D_reg"])
def test_d_sees_every_image_blurred_during_the_warm_up(data, tmp_path, name):
    """Sigma 1.5 fading over 1 kimg: at image 0 every image D sees (fakes, reals, R1's reals) is blurred by 1.5."""
    cfg, t, phases, images = _tiny3(data, tmp_path, blur_sigma=1.5, blur_fade_kimg=1.0)
    seen, fakes = [], []
    t.D.register_forward_pre_hook(lambda module, args: seen.append(args[0].detach().clone()))
    t.G.synthesis.register_forward_hook(lambda module, args, out: fakes.append(out.detach().clone()))
    _run(cfg, t, phases, images, name)
    (mb,) = micro_batches(cfg, plan_step(cfg, 0, phases), 0, images, torch.zeros([4, 0]), t.G.num_ws)
    assert mb.blur_sigma == 1.5
    # D main judges the fakes and the reals in one pass
    originals = {"G_main": fakes, "D_main": [torch.cat(fakes + [images])], "D_reg": [images]}[name]
    assert len(seen) == len(originals)
    for got, original in zip(seen, originals, strict=True):
        torch.testing.assert_close(got, blur_images(original, 1.5))
        assert not torch.allclose(got, original, atol=1e-3)


def test_r1_differentiates_through_the_blur(data, tmp_path):
    cfg, t, phases, images = _tiny3(data, tmp_path, blur_sigma=1.5, blur_fade_kimg=1.0, gamma=2.0)
    D = copy.deepcopy(t.D)
    _run(cfg, t, phases, images, "D_reg")
    opt = phases[[p.name for p in phases].index("D_reg")].network.opt
    grads = {i: s["exp_avg"] for i, s in opt.state_dict()["state"].items()}
    real = images.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(D(blur_images(real, 1.5), torch.zeros([4, 0])).sum(), real, create_graph=True)
    assert_distinct(g, "D's input gradients of the reals")  # so that R1 of other images cannot pass for theirs
    penalty = g.square().flatten(1).sum(1).mean() * (2.0 / 2) * cfg.loss.r1_interval
    expected = torch.autograd.grad(penalty, list(D.parameters()), allow_unused=True)
    for i, value in enumerate(expected):
        if value is not None and value.abs().max() > 0:
            torch.testing.assert_close(grads[i], value, rtol=1e-4, atol=1e-7)


def test_a_snapshot_with_other_precision_settings_starts_a_run(data, tmp_path):
    """An imported official network (fp16 in the top 4 octaves, clamp 256) initialises an fp32 run; different
    layers do not."""
    cfg, t, _, _ = _tiny3(data, tmp_path)
    arch = {**t.G.config, "num_fp16_res": 4, "conv_clamp": 256}
    source = StyleGAN3Generator(**arch)
    with torch.no_grad():
        source.synthesis.L0_28_16.weight.fill_(0.5)
    save_snapshot(tmp_path / "official.safetensors", source, {})
    G_ema = StyleGAN3Generator(**t.G.config)
    load_pretrained([tmp_path / "official.safetensors"], t, G_ema)
    assert torch.equal(t.G.synthesis.L0_28_16.weight, source.synthesis.L0_28_16.weight)
    assert t.G.config["num_fp16_res"] == 0  # the run keeps its own precision
    save_snapshot(tmp_path / "other.safetensors", StyleGAN3Generator(**{**arch, "num_layers": 3}), {})
    with pytest.raises(UserError, match="differs from the one this run builds: num_layers 3 .*run the command again"):
        load_pretrained([tmp_path / "other.safetensors"], t, G_ema)


def test_checkpoints_from_before_a_config_field_existed_resume(data, tmp_path):
    """A field added later with a default (here every StyleGAN3 field) is no difference for an old StyleGAN2 run."""
    cfg = resolve(tiny_options(data, tmp_path))
    old = {k: v for k, v in maths_fields(cfg.to_dict()).items() if k not in ("model.generator", "loss.blur_sigma")}
    assert check_config({"config": old}, cfg, tmp_path) == []
    changed = old | {"loss.gamma": 3.0}
    with pytest.raises(UserError, match="loss.gamma"):
        check_config({"config": changed}, cfg, tmp_path)
    assert math.isclose(cfg.loss.gamma, 0.05)
