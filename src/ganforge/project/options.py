"""The options of `ganforge project` as one frozen dataclass, and the settings it runs with.

The defaults are the official projector's (StyleGAN2, Karras et al. 2020, Sec. 5 and App. D; the projector that
stylegan2-ada-pytorch ships): 1000 steps of Adam from the average w, a learning rate ramped up over the first 5 %
and down by a cosine over the last 25 %, Gaussian noise on w starting at 0.05 of w's spread and falling
quadratically to 0 at 75 % of the steps, the per-layer noise maps optimised too, held to unit variance and penalised
for spatial autocorrelation with weight 1e5. Pivotal tuning's are Roich et al. 2022's (Sec. 3-4, "PTI"). Imports
nothing heavy, so the CLI can take its choices and ranges from here.
"""

import dataclasses
from pathlib import Path

from ganforge.errors import UserError

SPACES = ("w", "wplus")  # one w for every layer (the official projector), or one per layer
PERCEPTUAL_CHOICES = ("inception", "none")  # or the path of NVlabs' vgg16.pt

STEPS = 1000
W_AVG_SAMPLES = 10_000  # latents whose mapped w give the starting point (their mean) and the noise scale
LEARNING_RATE = 0.1
LR_RAMPUP = 0.05  # fraction of the steps over which the learning rate rises from 0
LR_RAMPDOWN = 0.25  # fraction at the end over which it falls back to 0 (half a cosine)
W_NOISE = 0.05  # the noise added to w at step 0, in units of w's standard deviation
W_NOISE_RAMP = 0.75  # fraction of the steps after which no noise is added
NOISE_REGULARIZATION = 1e5  # weight of the noise maps' autocorrelation penalty
SEED = 303  # the official projector's default

TUNE_LEARNING_RATE = 3e-4  # PTI: Adam on G's synthesis weights
TUNE_L2 = 1.0  # PTI eq. 2: lambda_L2, the pixel term beside the perceptual one
LOCALITY_ALPHA = 30.0  # PTI eq. 4: how far from the pivot, in w units, the regulariser's latents lie
LOCALITY_WEIGHT = 0.1  # PTI eq. 6: lambda_R
LOCALITY_L2 = 0.1  # PTI eq. 5: lambda_L2^R

MAX_STEPS = 100_000
MAX_TARGETS = 10_000
MAX_BATCH = 64
MAX_SEED = 2**32 - 1


@dataclasses.dataclass(frozen=True)
class ProjectOptions:
    """What `ganforge project` does: project each of `targets` into `network`'s latent space (`space`) in `steps`
    steps, then, with `tune_g` > 0, tune G around each pivot for that many steps (PTI); files go to `outdir/<target's
    name>/`. `perceptual`: inception, none, or the path of NVlabs' vgg16.pt. `batch`: targets optimised together
    (each has its own w, noise maps and random stream, so a target's result does not depend on which others share its
    batch, up to the rounding of batched arithmetic)."""

    network: Path
    targets: tuple[Path, ...]
    outdir: Path
    space: str = "w"
    steps: int = STEPS
    tune_g: int = 0
    perceptual: str = "inception"
    seed: int = SEED
    class_index: int | None = None
    batch: int = 4
    video: bool = False
    device: str = "auto"
    inception: Path | None = None  # the FID Inception file for --perceptual inception (None: searched as metrics do)

    def __post_init__(self):
        assert self.space in SPACES, self.space

    def problems(self) -> list[str]:
        """Every problem of these options (the CLI's types check most ranges; options made in Python are checked here
        too)."""
        problems = []
        if not self.targets:
            problems.append("--target: name at least one image to project")
        if len(self.targets) > MAX_TARGETS:
            problems.append(f"--target: {len(self.targets):,} images, more than {MAX_TARGETS:,}; split the work")
        stems = [Path(t).stem for t in self.targets]
        repeated = sorted({stem for stem in stems if stems.count(stem) > 1})
        if repeated:
            problems.append(
                f"--target: several images are named {', '.join(repeated[:3])} (each target's files go to "
                "OUTDIR/<its name>/); rename them or project them in separate runs"
            )
        for flag, value, low, high in (
            ("--steps", self.steps, 1, MAX_STEPS),
            ("--tune-g", self.tune_g, 0, MAX_STEPS),
            ("--batch", self.batch, 1, MAX_BATCH),
            ("--seed", self.seed, 0, MAX_SEED),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                problems.append(f"{flag}: {value!r:.40} is not a whole number from {low} to {high:,}")
        return problems

    def check(self) -> None:
        problems = self.problems()
        if problems:
            raise UserError(*problems)

    def target_folder(self, target: Path) -> Path:
        return self.outdir / Path(target).stem
