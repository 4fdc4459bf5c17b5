"""Progressive growing (Karras et al. 2018, "Progressive Growing of GANs", Sec. 3 and Fig. 2): a StyleGAN2 G and D
trained from a low resolution up, each doubling faded in while the previous resolution's image path fades out.

A network built `progressive` has an image layer (G's toRGB, D's fromRGB) at every resolution, and a `stage`:
(resolution, fade), the highest resolution it runs at and the weight of that resolution's new layers, which rises
linearly from 0 to 1 during a fade and stays 1 after it. A stage is set from outside (training sets it from the image
count) and is part of the network's recorded arguments, so a snapshot taken during growth rebuilds as it was taken.
"""

import math

import torch

from ganforge.errors import UserError
from ganforge.limits import stage_problem
from ganforge.nets.layers import downsample2d, upsample2d


def staged(config: dict, resolution: int, stage) -> tuple[dict, tuple[int, float]]:
    """A network's recorded arguments `config` with `stage` ([resolution, fade]; None: fully grown), and the stage as
    the network runs it ((resolution, 1.0) once fully grown); a UserError when the stage is not one it can take."""
    problem = stage_problem(stage, resolution, config.get("progressive", False))
    if problem:
        raise UserError(problem)
    grown = stage is None or (stage[0] == resolution and stage[1] == 1)
    config = {key: value for key, value in config.items() if key != "stage"}
    if grown:
        return config, (resolution, 1.0)
    return config | {"stage": [int(stage[0]), float(stage[1])]}, (int(stage[0]), float(stage[1]))


def resized(img: torch.Tensor, resolution: int, f: torch.Tensor) -> torch.Tensor:
    """`img` taken by 2x FIR steps (the networks' own up- and downsampling filter) to `resolution` on its short side:
    a network's resolution, which is the short side of a non-square one (its `aspect`)."""
    while min(img.shape[-2:]) > resolution:
        img = downsample2d(img, f)
    while min(img.shape[-2:]) < resolution:
        img = upsample2d(img, f)
    return img


def blended_reals(img: torch.Tensor, resolution: int, fade: float, f: torch.Tensor) -> torch.Tensor:
    """Real images as D sees them at a stage: downsampled to its resolution and, during a fade, blended with their
    version at half the resolution, upsampled, by 1 - fade (ProGAN Sec. 3: the reals are interpolated between the
    two resolutions as the generator's output is)."""
    img = resized(img, resolution, f)
    if fade >= 1:
        return img
    coarse = upsample2d(downsample2d(img, f), f)
    return torch.lerp(coarse, img, fade)


def stage_of(network) -> list | None:
    """The growth stage a network records ([resolution, fade]), or None: fully grown, or not a growing network."""
    config = getattr(network, "config", None)
    return config.get("stage") if isinstance(config, dict) else None


def describe_stage(stage) -> str:
    """A stage as logs say it: "16 px" or "16 px, fading in at 0.25"."""
    resolution, fade = stage
    return f"{resolution} px" + (f", fading in at {fade:.2f}" if fade < 1 else "")


def scheduled_stage(grow_from: int, grow_kimg: float, resolution: int, nimg: int) -> tuple[int, float]:
    """(resolution, fade) after `nimg` images of growth from `grow_from` (train/schedules.py says the schedule):
    periods of `grow_kimg` alternate, stable at grow_from, fade, stable, fade, ..., until the data's resolution."""
    period = round(grow_kimg * 1000)
    periods, into = divmod(nimg, period)
    if periods >= 2 * round(math.log2(resolution // grow_from)):
        return resolution, 1.0
    fading = periods % 2 == 1
    return grow_from << (periods + 1) // 2, into / period if fading else 1.0
