"""What the loop runs when, with which hyper-parameters: lazy regularisation (StyleGAN2 Sec. 3.1 and App. C), the
`auto` preset (ADA App. D), the EMA generator (ProGAN Sec. 4.1; ADA App. D) and --mirror, each against values
written out by hand from the papers."""

import dataclasses

import pytest
import torch
from train_helpers import make_dataset, tiny_options

from ganforge.data import source
from ganforge.presets import PRESETS
from ganforge.train import loop, resolve, run
from ganforge.train.build import build
from ganforge.train.options import TrainOptions
from ganforge.train.resolver import DatasetFacts, Facts
from ganforge.train.schedules import ema_beta, update_ema


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("train_schedule") / "squares")


def test_loop_runs_r1_every_16_and_path_length_every_4_steps_and_ramps_the_ema_up(data, tmp_path, monkeypatch):
    ran, betas, update_ema = [], [], loop.update_ema

    def record(t, phase, index, plan, mbs):
        ran.append((phase.name, plan.cur_nimg))
        return {}

    def record_ema(ema, model, beta):
        betas.append(beta)
        update_ema(ema, model, beta)

    monkeypatch.setattr(loop, "run_phase", record)
    monkeypatch.setattr(loop, "update_ema", record_ema)
    steps = 17
    assert run(resolve(tiny_options(data, tmp_path, kimg=steps * 0.008, tick=steps * 0.008))) == 0
    by_phase = {name: [nimg // 8 for n, nimg in ran if n == name] for name in ("G_main", "G_reg", "D_main", "D_reg")}
    assert by_phase == {"G_main": list(range(steps)), "G_reg": [0, 4, 8, 12, 16],
                        "D_main": list(range(steps)), "D_reg": [0, 16]}  # fmt: skip
    assert [name for name, nimg in ran if nimg == 0] == ["G_main", "G_reg", "D_main", "D_reg"]
    # tiny: half-life 1 kimg, ramp-up 0.05: after n images the half-life is 0.05 n (< 1000), EMA after each step
    assert betas == pytest.approx([0.0] + [0.5 ** (8 / (0.05 * 8 * k)) for k in range(1, steps)], rel=1e-12)


def _adam(phases, name):
    (phase,) = [p for p in phases if p.name == name]
    group = phase.network.opt.param_groups[0]
    return group["lr"], group["betas"]


def test_lazy_regularisation_corrects_adam_lr_and_betas(data, tmp_path):
    """c = k / (k + 1) for a regulariser every k steps (StyleGAN2 App. C): lr * c, betas ** c, shared by the phases
    of one network; without its regulariser a network keeps the plain values."""
    cfg = resolve(tiny_options(data, tmp_path, glr=0.003, dlr=0.002))
    _, phases, _ = build(cfg, torch.device("cpu"))
    g_lr, (g_beta1, g_beta2) = _adam(phases, "G_main")
    assert g_lr == pytest.approx(0.003 * 4 / 5) and g_beta1 == 0 and g_beta2 == pytest.approx(0.99 ** (4 / 5))
    d_lr, (d_beta1, d_beta2) = _adam(phases, "D_main")
    assert d_lr == pytest.approx(0.002 * 16 / 17) and d_beta1 == 0 and d_beta2 == pytest.approx(0.99 ** (16 / 17))
    assert _adam(phases, "G_reg") == _adam(phases, "G_main") and _adam(phases, "D_reg") == _adam(phases, "D_main")

    _, phases, _ = build(resolve(tiny_options(data, tmp_path, gamma=0, dlr=0.002)), torch.device("cpu"))
    assert [p.name for p in phases] == ["G_main", "G_reg", "D_main"]
    assert _adam(phases, "D_main") == (0.002, (0.0, 0.99))
    cfg = resolve(tiny_options(data, tmp_path, glr=0.003))
    _, phases, _ = build(
        dataclasses.replace(cfg, loss=dataclasses.replace(cfg.loss, pl_weight=0.0)), torch.device("cpu")
    )
    assert [p.name for p in phases] == ["G_main", "D_main", "D_reg"]
    assert _adam(phases, "G_main") == (0.003, (0.0, 0.99))
    weak = dataclasses.replace(cfg.loss, pl_weight=0.5, gamma=0.5)  # weights below 1 regularise too
    momentum = dataclasses.replace(cfg.optim, beta1=0.5)  # StyleGAN's beta1 is 0; another is corrected alike
    _, phases, _ = build(dataclasses.replace(cfg, loss=weak, optim=momentum), torch.device("cpu"))
    assert [p.name for p in phases] == ["G_main", "G_reg", "D_main", "D_reg"]
    assert _adam(phases, "D_reg")[1][0] == pytest.approx(0.5 ** (16 / 17))


@pytest.mark.parametrize(
    "resolution, gpus, batch, gamma, ema_kimg, channel_base, lr",
    [(8, 1, 32, 0.0004, 10.0, 16384, 0.0025), (32, 2, 64, 0.0032, 20.0, 16384, 0.0025),
     (256, 1, 16, 0.8192, 5.0, 16384, 0.0025), (512, 1, 8, 6.5536, 2.5, 32768, 0.0025),
     (1024, 8, 32, 6.5536, 10.0, 32768, 0.002)],
)  # fmt: skip
def test_auto_preset_derives_the_ada_heuristic(tmp_path, resolution, gpus, batch, gamma, ema_kimg, channel_base, lr):
    """ADA App. D: batch max(min(gpus * min(4096 / res, 32), 64), gpus), gamma 0.0002 res^2 / batch, EMA half-life
    batch * 10 / 32 kimg with ramp-up 0.05, minibatch-stddev group min(batch / gpus, 4); values worked out by hand."""
    dataset = DatasetFacts(resolution=resolution, channels=3, label_dim=0, name="faces")
    # a named precision: `auto` would ask this machine's CUDA for the GPU's compute capability
    options = TrainOptions(data=str(tmp_path), outdir=str(tmp_path), precision="fp32")
    cfg = resolve(options, Facts(dataset, gpus, "cuda"))
    s = cfg.schedule
    assert (s.batch, s.batch_gpu, cfg.model.mbstd_group) == (batch, batch // gpus, 4)
    assert cfg.loss.gamma == pytest.approx(gamma) and s.ema_kimg == pytest.approx(ema_kimg) and s.ema_rampup == 0.05
    assert (cfg.model.channel_base, cfg.optim.g_lr, cfg.optim.d_lr) == (channel_base, lr, lr)
    assert PRESETS["auto"].mapping_layers == cfg.model.mapping_layers == 2


def test_ema_beta_is_a_half_life_in_images_with_rampup():
    assert ema_beta(32, 10**6, ema_kimg=10, rampup=None) == pytest.approx(0.5 ** (32 / 10_000))
    # ramp-up: the half-life is at most 0.05 x the images seen so far (20 kimg seen -> 1 kimg)
    assert ema_beta(32, 20_000, ema_kimg=10, rampup=0.05) == pytest.approx(0.5 ** (32 / 1_000))
    assert ema_beta(32, 10**6, ema_kimg=10, rampup=0.05) == pytest.approx(0.5 ** (32 / 10_000))
    assert ema_beta(32, 0, ema_kimg=10, rampup=0.05) == 0  # the first step copies the generator


def test_update_ema_interpolates_parameters_and_copies_buffers():
    ema, model = torch.nn.BatchNorm1d(3), torch.nn.BatchNorm1d(3)
    with torch.no_grad():
        ema.weight.copy_(torch.tensor([1.0, 2.0, 3.0]))
        model.weight.copy_(torch.tensor([5.0, 6.0, -1.0]))
        model.running_mean.copy_(torch.tensor([7.0, 8.0, 9.0]))
    update_ema(ema, model, beta=0.75)
    expected = [0.75 * 1 + 0.25 * 5, 0.75 * 2 + 0.25 * 6, 0.75 * 3 + 0.25 * -1]  # beta * ema + (1 - beta) * model
    torch.testing.assert_close(ema.weight.data, torch.tensor(expected))
    assert ema.running_mean.tolist() == model.running_mean.tolist() == [7.0, 8.0, 9.0]  # the model's, into the EMA
    assert torch.equal(model.weight.data, torch.tensor([5.0, 6.0, -1.0]))


class _LoaderReached(Exception):
    pass


def test_mirror_trains_on_the_flipped_copies_too(data, tmp_path, monkeypatch):
    datasets = []

    def make_loader(dataset, *args, **kwargs):
        datasets.append(dataset)
        raise _LoaderReached

    monkeypatch.setattr(source, "make_loader", make_loader)
    with pytest.raises(_LoaderReached):
        run(resolve(tiny_options(data, tmp_path, mirror=True)))
    (dataset,) = datasets
    assert len(dataset) == 2 * 32
    assert torch.equal(dataset[32 + 5][0], dataset[5][0].flip(-1))
