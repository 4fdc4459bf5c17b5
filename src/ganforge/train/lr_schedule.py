"""Learning-rate schedules: a factor on the base rates (`--glr`/`--dlr`, already corrected for lazy
regularisation) that is a pure function of the number of images trained, so a resumed run continues on the same curve
and a different world size or accumulation gives the same rates.

- warm-up: linear from 0 to 1 over `lr_warmup_kimg` (Goyal et al. 2017, "Accurate, large minibatch SGD", Sec. 2.2;
  edm2 ramps its rate the same way), before any of the schedules below.
- constant: 1.
- cosine: 1 at the end of the warm-up down to `lr_min_ratio` at `lr_horizon_kimg`, then flat (Loshchilov & Hutter
  2017, "SGDR", Eq. 5, one cycle without restarts).
- step: x `lr_gamma` at each of `lr_steps` kimg (the step decay of He et al. 2016, Sec. 3.4).
"""

import math

from ganforge.config import OptimConfig


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
