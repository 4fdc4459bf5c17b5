"""Progressive growing in the training loop (--grow; nets/growth.py, and the schedule in train/schedules.py): each
step sets the stage of G, D and G_ema from the image count, resets Adam's moments where a fade starts or ends, and
takes the reals to the stage's resolution with the networks' own filter. Everything here is a function of the image
count, so a run stopped in the middle of a fade resumes exactly."""

import torch

from ganforge.nets.growth import blended_reals, resized
from ganforge.nets.layers import fir_kernel
from ganforge.train.schedules import stage_at, stage_starts


def grow(trainer, G_ema: torch.nn.Module, cur_nimg: int) -> tuple[int, float]:
    """Set the networks' stage for the step at `cur_nimg` (and reset both optimisers where a fade starts or ends);
    returns the stage (resolution, fade)."""
    cfg = trainer.cfg
    stage = stage_at(cfg.model, cfg.schedule, cfg.data.resolution, cur_nimg)
    for network in (trainer.G, trainer.D, G_ema):
        network.set_stage(list(stage))
    if stage_starts(cfg.model, cfg.schedule, cfg.data.resolution, cur_nimg):
        for network in trainer.networks.values():
            network.opt.state.clear()
    return stage


def reals_at(images: torch.Tensor, stage: tuple[int, float]) -> torch.Tensor:
    """The step's real images as D sees them at `stage` (blended with the coarser resolution during a fade)."""
    return blended_reals(images, stage[0], stage[1], fir_kernel().to(images.device))


def at_stage(images: torch.Tensor, resolution: int) -> torch.Tensor:
    """Images of the network's resolution taken to a stage's `resolution` (what D takes while growing)."""
    return resized(images, resolution, fir_kernel().to(images.device))


def trained_stage(cfg, cur_nimg: int) -> tuple[int, float]:
    """The stage of the networks a checkpoint at `cur_nimg` holds: that of its last step (what its snapshot records)."""
    return stage_at(cfg.model, cfg.schedule, cfg.data.resolution, max(cur_nimg - cfg.schedule.batch, 0))
