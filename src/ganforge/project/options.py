"""The options of `ganforge project` as one frozen dataclass, and the settings it runs with.

The defaults are the official projector's (StyleGAN2, Karras et al. 2020, Sec. 5 and App. D; the projector that
stylegan2-ada-pytorch ships): 1000 steps of Adam from the average w, a learning rate ramped up over the first 5 %
and down by a cosine over the last 25 %, Gaussian noise on w starting at 0.05 of w's spread and falling
quadratically to 0 at 75 % of the steps, the per-layer noise maps optimised too, held to unit variance and penalised
for spatial autocorrelation with weight 1e5. Pivotal tuning's are Roich et al. 2022's (Sec. 3-4, "PTI"). Each
option is declared on the field it sets (`ganforge.option`): the command's click options and the value checks are
derived from the declarations. Imports nothing heavy, so the CLI can take its declarations from here.
"""

import dataclasses
from pathlib import Path

from ganforge.devices import DEVICE_CHOICES
from ganforge.errors import UserError
from ganforge.limits import MAX_CLASSES
from ganforge.option import Range, declared, option, value_problems

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


# The sections of `ganforge project --help`
FILES, PROJECTION, TUNING = "Network, targets and output", "Projection", "Pivotal tuning"


@dataclasses.dataclass(frozen=True)
class ProjectOptions:
    """What `ganforge project` does: project each of `targets` into `network`'s latent space (`space`) in `steps`
    steps, then, with `tune_g` > 0, tune G around each pivot for that many steps (PTI); files go to `outdir/<target's
    name>/`. `perceptual`: inception, none, or the path of NVlabs' vgg16.pt. `batch`: targets optimised together
    (each has its own w, noise maps and random stream, so a target's result does not depend on which others share its
    batch, up to the rounding of batched arithmetic). Each option is declared on the field it sets."""

    network: Path = option(
        FILES,
        "Generator: a ganforge snapshot, an NVlabs pickle (.pkl) or a rosinality checkpoint (.pt); StyleGAN2 or 3.",
        required=True,
    )
    targets: tuple[Path, ...] = option(
        FILES,
        "An image to project (any size: its centred square is resized to the network's); repeat for several.",
        flag="--target",
        multiple=True,
        required=True,
    )
    outdir: Path = option(
        FILES,
        "Output folder: each target's files in OUTDIR/<its name>/ (projected_w.npz, proj.png, compare.png, ...).",
        required=True,
        metavar="DIRECTORY",
    )
    space: str = option(
        PROJECTION,
        "w: one w for every layer (the official projector; edits behave); wplus: one w per layer (closer fits).",
        default="w",
        choices=SPACES,
    )
    steps: int = option(PROJECTION, "Optimisation steps.", default=STEPS, range=Range(1, MAX_STEPS, whole=True))
    tune_g: int = option(
        TUNING,
        "Pivotal tuning (PTI, Roich et al. 2022): tune G around the projection for STEPS steps (350 in the paper) and "
        "write it as G_tuned.safetensors beside the latent; 0: off.",
        default=0,
        range=Range(0, MAX_STEPS, whole=True),
        metavar="STEPS",
    )
    perceptual: str = option(
        PROJECTION,
        "The distance to the target: inception (offline, from the fid extra's Inception: an LPIPS-like distance, not "
        "the official one), none (pixels only), or the path of NVlabs' vgg16.pt (the official projector's).",
        default="inception",
        metavar="|".join((*PERCEPTUAL_CHOICES, "PATH")),
    )
    seed: int = option(
        PROJECTION,
        "Fixes each target's noise maps and the noise on w.",
        default=SEED,
        range=Range(0, MAX_SEED, whole=True),
    )
    class_index: int | None = option(
        PROJECTION,
        "Class of a conditional network.",
        default=None,
        flag="--class",
        range=Range(0, MAX_CLASSES - 1, whole=True),
    )
    batch: int = option(
        FILES,
        "Targets optimised together (each on its own; faster on a GPU).",
        default=4,
        range=Range(1, MAX_BATCH, whole=True),
    )
    video: bool = option(FILES, "Also proj.mp4 (or .webp/.gif): the optimisation beside the target.", default=False)
    device: str = option(FILES, "Where to project.", default="auto", choices=DEVICE_CHOICES)
    inception: Path | None = option(  # None: searched as metrics do
        PROJECTION,
        "The FID Inception file for --perceptual inception (default: found as `ganforge metrics` finds it).",
        default=None,
    )

    def problems(self) -> list[str]:
        """Every problem of these options: the targets, then each value its declaration does not accept."""
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
        return problems + value_problems(PROJECT_OPTIONS, self)

    def check(self) -> None:
        problems = self.problems()
        if problems:
            raise UserError(*problems)

    def target_folder(self, target: Path) -> Path:
        return self.outdir / Path(target).stem


# Every option of `ganforge project`, in the order of its fields.
PROJECT_OPTIONS = declared(ProjectOptions)
