"""Everything in training that is a function of the images seen so far: which phases run, the EMA's decay, the
learning rate, the discriminator blur's fade. Each is a pure function of `cur_nimg` (and the Config), so a resumed
run, or one on another number of processes, does the same thing at the same image. A step reads them all from one
`StepPlan`, made once at its start (`plan_step`).

Cadence: lazy regularisation (StyleGAN2 Sec. 3.1) and two-phase training, which trains D alone for `d_warmup_kimg`
(G main and G regularisation skipped, G untouched), then gives G one step every `d_steps` D steps, as in the
alternating schedule of Goodfellow et al. 2014 (Algorithm 1, k D steps per G step). G's lazy regulariser counts G's
own steps.

EMA of the generator weights (Karras et al. 2018 "Progressive growing of GANs", Sec. 4.1; half-life in images and
ramp-up as in Karras et al. 2020 "Training GANs with limited data", App. D).

Learning rate: a factor on the base rates (`--glr`/`--dlr`, already corrected for lazy regularisation):
- warm-up: linear from 0 to 1 over `lr_warmup_kimg` (Goyal et al. 2017, "Accurate, large minibatch SGD", Sec. 2.2;
  edm2 ramps its rate the same way), before any of the schedules below.
- constant: 1.
- cosine: 1 at the end of the warm-up down to `lr_min_ratio` at `lr_horizon_kimg`, then flat (Loshchilov & Hutter
  2017, "SGDR", Eq. 5, one cycle without restarts).
- step: x `lr_gamma` at each of `lr_steps` kimg (the step decay of He et al. 2016, Sec. 3.4).

Annealing (R3GAN, Huang et al. 2024, the released training setup): with `anneal_kimg`, gamma, Adam's beta2, the EMA
half-life and --aug fixed's p go from a start to a final value along a half cosine over `anneal_kimg`, then stay; the
learning rate follows the cosine schedule above with `lr_horizon_kimg` = `anneal_kimg`, the same curve.

Blur: StyleGAN3-R's blurred-discriminator warm-up (Karras et al. 2021, App. D) fades out linearly
(`ganforge.augment.blur` applies it).

Growth (--grow; Karras et al. 2018, Sec. 3, and the schedule of its released configurations, which train each
resolution and fade each doubling in for the same number of images, 600 kimg): `grow_from` for `grow_kimg`, then for
each doubling a fade of `grow_kimg` (the new layers' weight rising linearly from 0 to 1) and `grow_kimg` at it; the
data's resolution once every doubling has faded in. The global batch stays the same at every stage (ProGAN and
StyleGAN1 raised it at low resolutions to fill the GPU, a throughput choice; a constant batch keeps ticks,
checkpoints and the sample order where they are and one step's images one stage's). Adam's moments are reset where a
fade starts and where it ends, as ProGAN's configurations do (`reset_opt_for_new_lod`): layers that had no gradient
would otherwise take their first steps with second moments that decayed towards zero.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from ganforge.config import AugmentConfig, Config, LossConfig, ModelConfig, OptimConfig, ScheduleConfig
from ganforge.nets.growth import scheduled_stage

# ---- cadence -------------------------------------------------------------------------------------------------------


def g_steps_before(schedule: ScheduleConfig, cur_nimg: int) -> int | None:
    """How many G steps came before the step at `cur_nimg`, when G trains at that step; None when it does not."""
    since_warmup = cur_nimg - round(schedule.d_warmup_kimg * 1000)
    period = schedule.batch * schedule.d_steps
    if since_warmup < 0 or since_warmup % period:
        return None
    return since_warmup // period


def phase_due(schedule: ScheduleConfig, network: str, interval: int, cur_nimg: int) -> bool:
    """Does a phase of `network` ("G" or "D") that runs every `interval` of its network's steps run at `cur_nimg`?"""
    if network == "D":
        return (cur_nimg // schedule.batch) % interval == 0
    g_steps = g_steps_before(schedule, cur_nimg)
    return g_steps is not None and g_steps % interval == 0


# ---- EMA -----------------------------------------------------------------------------------------------------------


def ema_beta(batch: int, cur_nimg: int, ema_kimg: float, rampup: float | None) -> float:
    """Decay per step so that the weight of older images halves every `ema_kimg` thousand images. With `rampup`, the
    half-life is at most `rampup` x the images seen so far, so early in training the average follows quickly."""
    ema_nimg = ema_kimg * 1000
    if rampup is not None:
        ema_nimg = min(ema_nimg, cur_nimg * rampup)
    return 0.5 ** (batch / max(ema_nimg, 1e-8))


@torch.no_grad()
def update_ema(ema: torch.nn.Module, model: torch.nn.Module, beta: float) -> None:
    """ema <- model + beta * (ema - model) for parameters; buffers (e.g. w_avg) are copied as they are."""
    for p_ema, p in zip(ema.parameters(), model.parameters(), strict=True):
        p_ema.copy_(p.detach().lerp(p_ema, beta))
    for b_ema, b in zip(ema.buffers(), model.buffers(), strict=True):
        b_ema.copy_(b)


MAGNITUDE_EMA_KIMG = 20  # half-life of StyleGAN3's magnitude_ema in thousands of images (its released training setup)


def magnitude_ema_beta(batch: int, accumulation: int) -> float:
    """Decay of StyleGAN3's per-layer magnitude_ema for one update. Each rank updates once per micro-batch round and
    the ranks' values are then averaged, so a step applies `accumulation` updates that together cover `batch` images:
    0.5 ** (batch / 20 kimg) per step, whatever the split (the released setup's value, which updates once per step)."""
    return 0.5 ** (batch / accumulation / (MAGNITUDE_EMA_KIMG * 1000))


# ---- learning rate -------------------------------------------------------------------------------------------------


def _nimg(kimg: float) -> int:
    return round(kimg * 1000)


def warmup_factor(optim: OptimConfig, cur_nimg: int) -> float:
    warmup = _nimg(optim.lr_warmup_kimg)
    return min(cur_nimg / warmup, 1.0) if warmup > 0 else 1.0


def cosine_factor(optim: OptimConfig, cur_nimg: int) -> float:
    start, end = _nimg(optim.lr_warmup_kimg), _nimg(optim.lr_horizon_kimg)
    progress = min(max((cur_nimg - start) / (end - start), 0.0), 1.0)
    return optim.lr_min_ratio + (1 - optim.lr_min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))


def step_factor(optim: OptimConfig, cur_nimg: int) -> float:
    passed = sum(cur_nimg >= _nimg(kimg) for kimg in optim.lr_steps)
    return optim.lr_gamma**passed


def lr_factor(optim: OptimConfig, cur_nimg: int) -> float:
    """The multiplier of the base learning rates for the step that starts at `cur_nimg` images."""
    decay = {"constant": lambda o, n: 1.0, "cosine": cosine_factor, "step": step_factor}[optim.lr_schedule]
    return warmup_factor(optim, cur_nimg) * decay(optim, cur_nimg)


# ---- annealing (R3GAN) ---------------------------------------------------------------------------------------------


def annealed(start: float, final: float, cur_nimg: int, anneal_kimg: float) -> float:
    """start at 0 images, final at `anneal_kimg` thousand images and after, along a half cosine between."""
    progress = min(cur_nimg / (anneal_kimg * 1000), 1.0)
    return final + (start - final) * 0.5 * (1 + math.cos(math.pi * progress))


def gamma_at(loss: LossConfig, schedule: ScheduleConfig, cur_nimg: int) -> float:
    """The gradient penalties' weight for the step at `cur_nimg`."""
    if schedule.anneal_kimg is None:
        return loss.gamma
    return annealed(loss.gamma, loss.gamma_final, cur_nimg, schedule.anneal_kimg)


def beta2_at(optim: OptimConfig, schedule: ScheduleConfig, cur_nimg: int) -> float | None:
    """Adam's beta2 for the step at `cur_nimg` where it is annealed; None where it keeps what the optimiser was
    built with."""
    if schedule.anneal_kimg is None:
        return None
    return annealed(optim.beta2, optim.beta2_final, cur_nimg, schedule.anneal_kimg)


def ema_kimg_at(schedule: ScheduleConfig, cur_nimg: int) -> float:
    """The EMA half-life in kimg for the step at `cur_nimg`: annealed from 0 (G_ema = G at the start)."""
    if schedule.anneal_kimg is None:
        return schedule.ema_kimg
    return annealed(0.0, schedule.ema_kimg, cur_nimg, schedule.anneal_kimg)


def augment_p_at(augment: AugmentConfig, schedule: ScheduleConfig, cur_nimg: int) -> float | None:
    """--aug fixed's p for the step at `cur_nimg` where it is annealed (from 0); None where it stays as built."""
    if schedule.anneal_kimg is None or augment.mode != "fixed":
        return None
    return annealed(0.0, augment.p, cur_nimg, schedule.anneal_kimg)


# ---- discriminator blur --------------------------------------------------------------------------------------------


def blur_sigma(cur_nimg: int, init_sigma: float, fade_kimg: float) -> float:
    """sigma at image count `cur_nimg`: init_sigma, falling linearly to 0 at fade_kimg thousand images, then 0."""
    if init_sigma <= 0 or fade_kimg <= 0:
        return 0.0
    return max(1 - cur_nimg / (fade_kimg * 1000), 0.0) * init_sigma


# ---- growth --------------------------------------------------------------------------------------------------------


def stage_at(model: ModelConfig, schedule: ScheduleConfig, resolution: int, cur_nimg: int) -> tuple[int, float]:
    """(resolution, fade) of the networks at `cur_nimg`: (resolution, 1.0) when not growing or fully grown."""
    if not model.grow:
        return resolution, 1.0
    return scheduled_stage(schedule.grow_from, schedule.grow_kimg, resolution, cur_nimg)


def stage_starts(model: ModelConfig, schedule: ScheduleConfig, resolution: int, cur_nimg: int) -> bool:
    """Does a fade start or end with the step at `cur_nimg` (where growth resets Adam's moments)?"""
    if not model.grow or cur_nimg == 0:
        return False
    before = stage_at(model, schedule, resolution, cur_nimg - schedule.batch)
    now = stage_at(model, schedule, resolution, cur_nimg)
    return before[0] != now[0] or (before[1] < 1) != (now[1] < 1)


# ---- the step's plan -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StepPlan:
    """Every scheduled value the training step at `cur_nimg` uses, computed once at its start (`plan_step`): the
    phases, their micro-batches, the augmentation and the EMA read them from here and from nowhere else."""

    cur_nimg: int  # images seen before this step: the seeds of its draws and the positions of its samples
    due: tuple[bool, ...]  # per phase, in the phases' order: does it run in this step (cadence above)
    lr_factor: float  # on every phase's base learning rate
    beta2: float | None  # Adam's annealed beta2 (R3GAN); None: each optimiser keeps the betas it was built with
    gamma: float  # the gradient penalties' weight
    blur_sigma: float  # of every image D sees (StyleGAN3-R's warm-up; 0: none)
    augment_p: float | None  # --aug fixed's annealed p; None: p stays where it is (ADA's, or a constant)
    ema_beta: float  # G_ema's decay after the step


def plan_step(cfg: Config, cur_nimg: int, phases: Sequence) -> StepPlan:
    """The plan of the step at `cur_nimg` of a run with `phases` (`train.phases.Phase`s: each its network, whose name
    says which cadence it follows, and its interval)."""
    s = cfg.schedule
    return StepPlan(
        cur_nimg=cur_nimg,
        due=tuple(phase_due(s, phase.network.name, phase.interval, cur_nimg) for phase in phases),
        lr_factor=lr_factor(cfg.optim, cur_nimg),
        beta2=beta2_at(cfg.optim, s, cur_nimg),
        gamma=gamma_at(cfg.loss, s, cur_nimg),
        blur_sigma=blur_sigma(cur_nimg, cfg.loss.blur_sigma, cfg.loss.blur_fade_kimg),
        augment_p=augment_p_at(cfg.augment, s, cur_nimg),
        ema_beta=ema_beta(s.batch, cur_nimg, ema_kimg_at(s, cur_nimg), s.ema_rampup),
    )
