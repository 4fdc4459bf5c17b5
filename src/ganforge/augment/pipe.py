"""Adaptive discriminator augmentation (ADA; Karras et al. 2020, "Training Generative Adversarial Networks with
Limited Data", arXiv:2006.06676).

`AugmentPipe` applies the paper's augmentations to every image D sees (reals and fakes alike, section 2.2), each
transform independently with probability `p` per sample. `AdaptiveAugment` tunes `p` from the sign of D's outputs on
reals (section 2.4). Checkpoint both, `{"pipe": pipe.state_dict(), "ada": ada.state_dict()}`, for an exact resume.

Pipeline (appendix B, figure 24), in this order:
  blit      xflip, rotate90, xint           exact pixel moves (one gather), mirrored at the border
  geom      scale, rotate, aniso, xfrac     one matrix per image, one band-limited resampling
  color     brightness, contrast, lumaflip, hue, saturation     one 4x4 colour matrix per image
  filter    four frequency bands amplified at random                (corrupt.py)
  noise     additive Gaussian noise
  cutout    a square of half the image size set to mid-grey
The paper composes blit and geom into one matrix; we apply blit separately because its moves are whole pixels, and
a permutation of pixels is lossless, so there is still exactly one resampling. `bgc` is the paper's default pipeline;
`bgcfnc` adds filter, noise and cutout; `bgcc` cutout only.
"""

import torch
from torch import nn

from ganforge import dist
from ganforge.augment import corrupt, ops
from ganforge.errors import UserError

BLIT = ("xflip", "rotate90", "xint")
GEOM = ("scale", "rotate", "aniso", "xfrac")
COLOR = ("brightness", "contrast", "lumaflip", "hue", "saturation")
CORRUPT = ("filter", "noise", "cutout")
ALL = BLIT + GEOM + COLOR + CORRUPT
# bgcc: R3GAN's released augmentation (Huang et al. 2024), ADA's bgc with cutout
PRESETS = {"blit": BLIT, "geom": GEOM, "color": COLOR, "bg": BLIT + GEOM, "bgc": BLIT + GEOM + COLOR,
           "bgcc": BLIT + GEOM + COLOR + ("cutout",), "bgcfnc": ALL}  # fmt: skip


def parse_ops(preset: str) -> tuple[str, ...]:
    """A preset name from PRESETS, or a comma-separated list of transform names, to the enabled transforms."""
    if preset in PRESETS:
        return PRESETS[preset]
    names = tuple(name.strip() for name in preset.split(",") if name.strip())
    unknown = [name for name in names if name not in ALL]
    if unknown or not names:
        raise UserError(
            f"--aug-pipe: unknown augmentation {', '.join(unknown) or repr(preset)}; use a preset "
            f"({', '.join(PRESETS)}) or a comma-separated list of {', '.join(ALL)}"
        )
    return names


class AugmentPipe(nn.Module):
    """Differentiable ADA augmentation of a batch of images [N, C, H, W] (any float dtype, any device).

    `preset`: a name from PRESETS or a comma-separated list of transforms; `p`: initial probability, kept in the
    scalar buffer `self.p` (so it moves with `.to()` and is in `state_dict()`). Square images are needed for
    "rotate90"; the colour group needs 1 or 3 channels (for 1 channel, hue and saturation are the identity and skipped).
    Random numbers come from torch's RNG on the images' device, or from `generator`, so a seeded call is reproducible.
    """

    def __init__(self, preset: str = "bgc", p: float = 0.0):
        super().__init__()
        self.ops = parse_ops(preset)
        self.register_buffer("p", torch.tensor(float(p)))
        self.register_buffer("filter", ops.lanczos_filter(), persistent=False)

    def extra_repr(self) -> str:
        return f"ops={','.join(self.ops)}, p={float(self.p):.4f}"

    def forward(self, images: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        assert images.ndim == 4, f"expected [N, C, H, W] images, got {tuple(images.shape)}"
        # Every transform runs whatever p is (at p = 0 each leaves every image bitwise as it was): a test of p's value
        # would make a CUDA host wait for the device at every call.
        # Pixel indices and transformation matrices need float32 at least: autocast's bf16 matmuls would misplace
        # pixels beyond 256. Low-precision images are augmented in float32 and returned in their own dtype.
        with torch.autocast(images.device.type, enabled=False):
            work = images.float() if images.dtype in (torch.float16, torch.bfloat16) else images
            return self._augment(work, generator).to(images.dtype)

    def _augment(self, images: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
        n, c, h, w = images.shape
        p = self.p.to(images.device)
        if any(op in self.ops for op in BLIT):
            images = ops.apply_blit(images, ops.blit_matrices(self.ops, n, h, w, p, generator))
        if any(op in self.ops for op in GEOM):
            images = self._geometric(images, ops.geometric_matrices(self.ops, n, h, w, p, generator))
        if any(op in self.ops for op in COLOR):
            if c not in (1, 3):
                raise UserError(
                    f"--aug-pipe: colour augmentation needs 1- or 3-channel images, got {c}; use --aug diffaug or "
                    "--aug noaug"
                )
            color = ops.color_matrices(self.ops, n, c, p, generator)
            changed = (color != torch.eye(4, device=color.device)).flatten(1).any(dim=1)
            images = torch.where(changed[:, None, None, None], ops.apply_color(images, color), images)
        if "filter" in self.ops:
            images = corrupt.apply_filter(images, corrupt.filter_gains(n, p, generator))
        if "noise" in self.ops:
            images = corrupt.add_noise(images, p, generator)
        if "cutout" in self.ops:
            images = images * corrupt.cutout_mask(n, h, w, p, generator).to(images.dtype)
        return images

    def _geometric(self, images: torch.Tensor, inverse: torch.Tensor) -> torch.Tensor:
        # Every image is resampled, and those whose matrix is the identity keep their input bitwise (unblurred).
        # Resampling only the moved ones would need their count on the host, a wait for the device at every call.
        moved = (inverse != torch.eye(3, device=inverse.device)).flatten(1).any(dim=1)
        warped = ops.resample(images, inverse, self.filter.to(images.device))
        return torch.where(moved[:, None, None, None], warped, images)


class AdaptiveAugment:
    """The ADA controller of section 2.4: keeps r_t = E[sign(D(real))] near `target` by adjusting the pipe's p.

    Call `accumulate(real_logits)` after each D step and `update(pipe, num_images)` after it with the number of
    (global) real images that step used. Every `interval` updates, p moves by
    sign(r_t - target) * images_since_last_adjustment / (speed_kimg * 1000), clamped to [0, 1]: with a fixed batch B,
    that is the paper's step of B * interval / (speed_kimg * 1000), so p can go from 0 to 1 in `speed_kimg` kimg.
    With several processes, r_t is averaged over all ranks: `update` sums the step's signs over ranks (collective, so
    every rank calls it alike), which also makes the state between steps the same on every rank, as a checkpoint
    written by rank 0 must be.
    """

    def __init__(self, target: float = 0.6, speed_kimg: float = 500, interval: int = 4):
        problems = []
        if not 0 < target < 1:
            problems.append(f"--target: ADA target must be in (0, 1), got {target}; the paper uses 0.6")
        if not speed_kimg > 0:
            problems.append(f"--ada-kimg: must be positive, got {speed_kimg}; the paper uses 500")
        if not (isinstance(interval, int) and interval >= 1):
            problems.append(f"--ada-interval: must be a positive integer, got {interval}; the paper uses 4")
        if problems:
            raise UserError(*problems)
        self.target, self.speed_kimg, self.interval = float(target), float(speed_kimg), interval
        self._step_signs = torch.zeros(())  # this rank's sum of sign(D(real)) since the last update(), on its device
        self._step_count = 0  # number of logits in _step_signs
        self._sign_sum = torch.zeros(())  # all ranks' sum of sign(D(real)) since the last adjustment
        self._count = torch.zeros(())  # number of logits in _sign_sum
        self._updates = 0  # update() calls since the last adjustment
        self._nimg = 0  # images since the last adjustment
        self._rt = torch.tensor(float("nan"))  # r_t at the last adjustment

    def accumulate(self, real_logits: torch.Tensor) -> None:
        """Add sign(D(x)) of one batch of reals to the running r_t estimate (no host sync)."""
        logits = real_logits.detach().float()
        self._step_signs = self._step_signs.to(logits.device, non_blocking=True) + logits.sign().sum()
        self._step_count += logits.numel()

    def update(self, pipe: AugmentPipe, num_images: int) -> None:
        """Count one D step of `num_images` images; every `interval` steps, move `pipe.p` towards the target."""
        # Host values reach the device as kernel arguments or copies it does not wait for: no host sync.
        step_totals = torch.stack([self._step_signs, torch.full_like(self._step_signs, self._step_count)])
        dist.all_reduce_sum_(step_totals)
        self._sign_sum = self._sign_sum.to(step_totals.device, non_blocking=True) + step_totals[0]
        self._count = self._count.to(step_totals.device, non_blocking=True) + step_totals[1]
        self._step_signs, self._step_count = torch.zeros_like(self._step_signs), 0
        self._updates += 1
        self._nimg += num_images
        if self._updates < self.interval:
            return
        measured = self._count > 0  # nothing measured, nothing to adjust on (a tensor: no host sync)
        rt = self._sign_sum / self._count.clamp(min=1)
        step = torch.sign(rt - self.target) * (self._nimg / (self.speed_kimg * 1000)) * measured
        pipe.p.copy_((pipe.p + step.to(pipe.p.device)).clamp(0, 1))
        self._rt = torch.where(measured, rt, self._rt.to(rt.device, non_blocking=True))
        self._sign_sum, self._count = torch.zeros_like(self._sign_sum), torch.zeros_like(self._count)
        self._updates, self._nimg = 0, 0

    def scalars(self, pipe: AugmentPipe) -> dict[str, torch.Tensor]:
        """{"p": current probability, "rt": r_t at the last adjustment (nan before the first)} as scalars on the
        device, for a caller that reads them with others in one transfer."""
        return {"p": pipe.p.detach(), "rt": self._rt.detach()}

    def stats(self, pipe: AugmentPipe) -> dict[str, float]:
        """`scalars` as numbers."""
        return {key: float(value) for key, value in self.scalars(pipe).items()}

    def state_dict(self) -> dict:
        """Plain ints and CPU tensors (no pickle); with the pipe's state_dict, enough to resume bitwise. Taken between
        update() calls, as the training loop does, it is the whole run's state, the same on every rank."""
        return {
            "sign_sum": self._sign_sum.detach().cpu().clone(),
            "count": self._count.detach().cpu().clone(),
            "updates": self._updates,
            "nimg": self._nimg,
            "rt": self._rt.detach().cpu().clone(),
        }

    def load_state_dict(self, state: dict) -> None:
        self._sign_sum = state["sign_sum"].clone().float()
        self._count = torch.as_tensor(state["count"], dtype=torch.float32).clone()
        self._updates, self._nimg = int(state["updates"]), int(state["nimg"])
        self._rt = state["rt"].clone().float()
