"""Every training schedule where the step consumes it: the value the optimiser, the penalty, the EMA, the
augmentation, the blur and the growing networks actually received at a few image counts of a real run, against values
worked out by hand (tests/train/test_train_controls.py and the others check the schedules as functions)."""

import dataclasses
import math
from collections import defaultdict

import pytest
import torch
from train_helpers import make_dataset, tiny_options

from ganforge.augment.pipe import AugmentPipe
from ganforge.nets.discriminator import Discriminator
from ganforge.train import loop, phases, resolve, run
from ganforge.train import loss as L

COS = [0.5 * (1 + math.cos(math.pi * k / 4)) for k in range(4)]  # a half cosine at 0, 1/4, 1/2 and 3/4 of its way


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("schedules_consumed") / "squares", count=16)


@pytest.fixture(scope="module")
def data16(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("schedules_consumed") / "squares16", count=16, res=16)


@pytest.fixture
def received(monkeypatch) -> dict:
    """{what: {(phase, image count) or image count: value}} of a run in this test, as its consumers received them:
    "lr" and "betas" of each optimiser step, "gamma" of each penalty, "ema" (the EMA's beta), "p" (the augmentation's
    probability), "sigma" (the blur of the images D sees) and "stage" (D's resolution and fade); what the start of a
    run computes before its first step (the network summaries) is left out."""
    got, now = defaultdict(dict), {"phase": None, "nimg": None}

    def note(what, value, by_phase=False):
        if now["nimg"] is not None:
            got[what][(now["phase"], now["nimg"]) if by_phase else now["nimg"]] = value

    def wrap(owner, name, record):
        original = getattr(owner, name)

        def wrapper(*args, **kwargs):
            record(*args, **kwargs)
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, wrapper)

    def phase_starts(trainer, phase, index, plan, mbs):
        now.update(phase=phase.name, nimg=plan.cur_nimg)

    def adam_steps(opt, *args, **kwargs):
        note("lr", opt.param_groups[0]["lr"], by_phase=True)
        note("betas", opt.param_groups[0]["betas"], by_phase=True)

    wrap(loop, "run_phase", phase_starts)
    wrap(torch.optim.Adam, "step", adam_steps)
    wrap(L, "zero_centred_penalties", lambda logits, images, gamma: note("gamma", gamma))
    wrap(loop, "update_ema", lambda ema, model, beta: note("ema", beta))
    wrap(AugmentPipe, "forward", lambda pipe, *args, **kwargs: note("p", pipe.p.item()))
    wrap(phases, "blur_images", lambda images, sigma: note("sigma", sigma))
    wrap(Discriminator, "forward", lambda D, img, *args, **kwargs: note("stage", (img.shape[-1], D.stage[1])))
    return got


def test_stylegan2_steps_take_the_warmed_up_stepped_lr_lazy_betas_gamma_and_ramped_ema(data, received):
    """tiny, 8 images a step: lr ramps over 2 steps then halves at 24 images; Adam's betas corrected for the lazy
    regularisers (c = 16/17 for D, 4/5 for G); R1 at step 0 with --gamma; the EMA's half-life ramps up (0.05 x the
    images seen)."""
    options = tiny_options(data, data.parent / "sg2", kimg=0.032, tick=0.032, gamma=0.3, lr_schedule="step",
                           lr_warmup_kimg=0.016, lr_steps="0.024", lr_gamma=0.5)  # fmt: skip
    assert run(resolve(options)) == 0
    d, g = 0.0025 * 16 / 17, 0.0025 * 4 / 5
    assert {n: received["lr"]["D_main", n] for n in (0, 8, 16, 24)} == pytest.approx({0: 0, 8: d / 2, 16: d, 24: d / 2})
    assert {n: received["lr"]["G_main", n] for n in (0, 8, 16, 24)} == pytest.approx({0: 0, 8: g / 2, 16: g, 24: g / 2})
    assert received["betas"]["D_reg", 0] == pytest.approx((0.0, 0.99 ** (16 / 17)))
    assert received["betas"]["G_reg", 0] == pytest.approx((0.0, 0.99 ** (4 / 5)))
    assert received["gamma"] == {0: 0.3}
    assert received["ema"] == pytest.approx({0: 0.0} | {n: 0.5 ** (8 / (0.05 * n)) for n in (8, 16, 24)})


def test_r3gan_steps_take_the_annealed_gamma_beta2_lr_ema_and_p(data, received):
    """tiny-r3gan with its annealing shortened to 16 images (4 steps of 4): gamma 0.05 -> 0.005, beta2 0.9 -> 0.99,
    lr 2e-4 down to a quarter, the EMA half-life 0 -> 1 kimg and --aug fixed's p 0 -> 0.2, along a half cosine."""
    cfg = resolve(tiny_options(data, data.parent / "r3gan", preset="tiny-r3gan", batch=4, kimg=0.016, aug="fixed"))
    cfg = dataclasses.replace(cfg, schedule=dataclasses.replace(cfg.schedule, anneal_kimg=0.016),
                              optim=dataclasses.replace(cfg.optim, lr_horizon_kimg=0.016))  # fmt: skip
    assert run(cfg) == 0
    steps = dict(enumerate((0, 4, 8, 12)))
    assert received["gamma"] == pytest.approx({n: 0.005 + 0.045 * COS[k] for k, n in steps.items()})
    for name in ("D_main", "G_main"):
        assert {received["betas"][name, n][0] for n in steps.values()} == {0.0}
        beta2 = {n: received["betas"][name, n][1] for n in steps.values()}
        assert beta2 == pytest.approx({n: 0.99 - 0.09 * COS[k] for k, n in steps.items()})
        lrs = {n: received["lr"][name, n] for n in steps.values()}
        assert lrs == pytest.approx({n: 2e-4 * (0.25 + 0.75 * COS[k]) for k, n in steps.items()})
    half_lives = {n: 1000 * (1 - COS[k]) for k, n in steps.items()}  # images; no ramp-up
    assert received["ema"] == pytest.approx({n: 0.5 ** (4 / max(h, 1e-8)) for n, h in half_lives.items()})
    assert received["p"] == pytest.approx({n: 0.2 * (1 - COS[k]) for k, n in steps.items()})


def test_stylegan3_d_sees_the_fading_blur_and_a_growing_d_the_stages(data, data16, received):
    """tiny3 with a blur of 2 px fading over 32 images (8 a step): 2, 1.5, 1 and 0.5. Then a growing tiny run from 8
    px, 16 images a period: 8 px for two steps, 16 px fading in at 0 and 1/2, then 16 px."""
    cfg = resolve(tiny_options(data, data.parent / "sg3", preset="tiny3", kimg=0.032, tick=0.032))
    cfg = dataclasses.replace(cfg, loss=dataclasses.replace(cfg.loss, blur_sigma=2.0, blur_fade_kimg=0.032))
    assert run(cfg) == 0
    assert received["sigma"] == pytest.approx({0: 2.0, 8: 1.5, 16: 1.0, 24: 0.5})
    received["stage"].clear()
    assert (
        run(resolve(tiny_options(data16, data.parent / "grow", kimg=0.04, tick=0.04, grow=True, grow_kimg=0.016))) == 0
    )
    assert received["stage"] == {0: (8, 1.0), 8: (8, 1.0), 16: (16, 0.0), 24: (16, 0.5), 32: (16, 1.0)}
