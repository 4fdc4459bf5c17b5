"""Exponential moving average of the generator weights (Karras et al. 2018 "Progressive growing of GANs", Sec. 4.1;
half-life in images and ramp-up as in Karras et al. 2020 "Training GANs with limited data", App. D)."""

import torch


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
