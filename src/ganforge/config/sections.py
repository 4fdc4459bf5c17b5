"""The sections of a training configuration, each `ganforge train` option declared on the field it sets.

A field states its default here and nowhere else, or (`preset=True`) that the `--cfg` row (`ganforge.presets`) decides
it; its `option(...)` states the flag, help and accepted values (`ganforge.option`). Fields without an option are set
by `ganforge.train.resolver` from the preset, the dataset or a derivation, or keep their default.
"""

from dataclasses import dataclass

from ganforge.devices import COMPILE_MODES, COMPILE_OFF, DEVICE_CHOICES, KERNEL_CHOICES
from ganforge.families import DEFAULT_GENERATOR
from ganforge.limits import ARCHITECTURES, MAX_CHANNEL_BASE, MAX_FP16_RES, MAX_R3GAN_WIDTH
from ganforge.metric_names import METRIC_NAMES
from ganforge.option import Range, option, setting
from ganforge.presets import DEFAULT_PRESET, PRESETS

PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
AUTO_PRECISION = "auto"  # --precision auto: one of PRECISIONS chosen for the hardware when the options are resolved
AUGMENTS = ("ada", "diffaug", "fixed", "noaug")
AUGMENT_PIPES = ("bgc", "bgcc", "bgcfnc")  # ADA's transform groups (ganforge.augment.pipe.PRESETS)
DIFFAUG_OPS = ("color", "translation", "cutout")
LR_SCHEDULES = ("constant", "cosine", "step")

POSITIVE, NON_NEGATIVE, FRACTION = Range(0, low_open=True), Range(0), Range(0, 1)
# Counts are bounded too, far beyond any use, so that no derivation meets a number it cannot hold.
MAX_BATCH, MAX_WORKERS = 65536, 256
BATCHES, WORKERS, STEPS, TICKS = Range(1, MAX_BATCH), Range(0, MAX_WORKERS), Range(1, 1000), Range(1, 10**6)
CHANNEL_BASES, WIDTHS = Range(1, MAX_CHANNEL_BASE), Range(1, MAX_R3GAN_WIDTH)  # the networks' limits (limits.py)
SEEDS = Range(0, 2**32 - 1)  # numpy's legacy seeding, which the seed also goes through, takes 32 bits
GRADIENT_NORM = "a positive gradient norm; try 0.5 to 1"

# The sections of `ganforge train --help`, in its order.
DATA, CONFIGURATION, AUGMENTATION, CONTROLS = "Data", "Configuration", "Augmentation", "Training controls"
PRECISION, OUTPUT, CHECKPOINTS, MONITORING = "Precision and speed", "Output", "Checkpoints", "Monitoring"
TRACKING = "Experiment trackers"
HELP_SECTIONS = (DATA, CONFIGURATION, AUGMENTATION, CONTROLS, PRECISION, OUTPUT, CHECKPOINTS, MONITORING, TRACKING)
TRACKERS, TRACKER_ARTIFACTS = ("mlflow", "wandb"), ("none", "snapshots", "checkpoints")  # ganforge.track.base

PRESET = option(
    CONFIGURATION,
    "Preset: auto derives batch, gamma and EMA from the resolution; stylegan3-t/-r train the alias-free generator the "
    "same way; r3gan-* are R3GAN's released configurations (its networks, loss and annealed schedules); tiny, tiny3 "
    "and tiny-r3gan are small CPU settings.",
    flag="--cfg",
    name="preset",
    choices=tuple(PRESETS),
    shown_default=DEFAULT_PRESET,
)


@dataclass(frozen=True, kw_only=True)
class DataConfig:
    """Where the images come from. `resolution`, `channels`, `label_dim`, `aspect` are read from the dataset."""

    path: str = option(
        DATA,
        "Dataset: folder, zip or fast archive, or shards (a folder or URL with index.json: s3://, gs://, https://, "
        "...; credentials from the protocol's usual environment variables).",
        flag="--data",
        required=True,
        maths=False,
    )
    name: str
    resolution: int  # the side, or of non-square images the shorter one
    channels: int
    label_dim: int
    # (rows, cols) of non-square images: height = resolution * rows, width = resolution * cols (StyleGAN2 only)
    aspect: tuple[int, ...] = setting((1, 1))
    images: int | None = setting(None, maths=False)  # how many images --data holds (None: not known, as for bench)
    cond: bool = option(DATA, "Condition on the dataset's class labels.", default=False)
    mirror: bool = option(DATA, "Add x-flipped copies of the images.", default=False)
    shuffle_buffer: int = option(
        DATA,
        "Shards: images each process holds to shuffle its stream (WebDataset's shuffle buffer; a shard of up to "
        "this many images is shuffled whole). More mixes better and takes more memory.",
        default=1000,
        range=Range(1, 10**6),
    )
    workers: int = option(
        DATA,
        "DataLoader processes per GPU decoding a zip or folder (a fast-format dataset is read by a thread of the "
        "training process instead; shards are decoded by this many threads).",
        default=2,
        range=WORKERS,
        maths=False,
    )


@dataclass(frozen=True, kw_only=True)
class ModelConfig:
    """Generator and discriminator architecture (both built from these fields)."""

    z_dim: int
    w_dim: int
    mapping_layers: int
    channel_base: int = option(
        CONFIGURATION,
        "Channel base: a layer at resolution r has min(cbase / r, cmax) channels (R3GAN: each stage).",
        flag="--cbase",
        range=CHANNEL_BASES,
        preset=True,
    )
    channel_max: int = option(
        CONFIGURATION, "Most channels in a layer (R3GAN: in a stage).", flag="--cmax", range=WIDTHS, preset=True
    )
    mbstd_group: int
    # StyleGAN2's layouts (limits.ARCHITECTURES); None where the network has no such choice (StyleGAN3's and R3GAN's
    # G, R3GAN's D)
    g_arch: str | None = option(
        CONFIGURATION,
        "StyleGAN2 G layout: skip (config F), orig or resnet (StyleGAN2 Fig. 7).",
        choices=ARCHITECTURES,
        default=None,
        preset=True,
    )
    d_arch: str | None = option(
        CONFIGURATION,
        "D layout (StyleGAN2's D, also StyleGAN3's): resnet (config F), orig or skip; cifar uses orig, as released.",
        choices=ARCHITECTURES,
        default=None,
        preset=True,
    )
    # Self-attention (SAGAN; nets/attention.py) at these block resolutions of StyleGAN2's G and of the D StyleGAN2
    # and StyleGAN3 train with
    g_attn: tuple[int, ...] = option(
        CONFIGURATION,
        "Self-attention (SAGAN) on StyleGAN2 G's features at these resolutions, e.g. 16,32.",
        default=(),
        kind=str,
        metavar="RES,RES",
    )
    d_attn: tuple[int, ...] = option(
        CONFIGURATION,
        "Self-attention (SAGAN) on D's features at these resolutions, e.g. 32.",
        default=(),
        kind=str,
        metavar="RES,RES",
    )
    # Progressive growing (ProGAN; nets/growth.py): the networks get an image layer at every resolution and train
    # from schedule.grow_from up (train/schedules.py, stage_at)
    grow: bool = option(
        CONFIGURATION,
        "Progressive growing (Karras et al. 2018): train StyleGAN2's G and D from --grow-from px up to the data's "
        "resolution, each doubling faded in over --grow-kimg.",
        default=False,
    )
    # one of the families' generators (ganforge.families.GENERATORS): "stylegan2", "stylegan3-t" or "stylegan3-r"
    # (with StyleGAN2's discriminator and loss), or "r3gan" (R3GAN's generator, discriminator and loss)
    generator: str = DEFAULT_GENERATOR
    synthesis_layers: int | None = None  # StyleGAN3's layers between the Fourier input and toRGB (14 in the paper)
    # R3GAN: each stage's grouped convolution has width / group_channels groups (its "cardinality"; the released
    # configurations use 8, or 16 for ImageNet), and each stage blocks_per_stage residual blocks (2 as released)
    group_channels: int | None = None
    blocks_per_stage: int | None = None


@dataclass(frozen=True, kw_only=True)
class LossConfig:
    """Loss weights and lazy-regularisation intervals (Karras et al. 2020b "StyleGAN2", Sec. 3.1 and 3.2)."""

    gamma: float = option(
        CONFIGURATION,
        "R1 weight (R3GAN: of R1 and R2 each, at the start of the annealing).",
        range=NON_NEGATIVE,
        preset=True,
    )
    gamma_final: float | None = None  # R3GAN: gamma at the end of the annealing (ScheduleConfig.anneal_kimg)
    r1_interval: int = 16
    pl_weight: float = 2.0
    pl_interval: int = 4
    pl_decay: float = 0.01
    pl_batch_shrink: int = 2
    style_mixing: float = 0.9
    blur_sigma: float = 0.0  # discriminator blur at the start, fading linearly to 0 (StyleGAN3 App. D)
    blur_fade_kimg: float = 0.0


@dataclass(frozen=True, kw_only=True)
class OptimConfig:
    """Adam for both networks (betas 0 and 0.99, StyleGAN2 App. B). `g_lr`/`d_lr` are the base rates that the
    learning-rate schedule scales (train/schedules.py); gradient clipping is off, as in the official recipe."""

    g_lr: float = option(CONFIGURATION, "G learning rate.", flag="--glr", range=POSITIVE, preset=True)
    d_lr: float = option(CONFIGURATION, "D learning rate.", flag="--dlr", range=POSITIVE, preset=True)
    beta1: float = 0.0
    beta2: float = 0.99
    beta2_final: float | None = None  # R3GAN: beta2 at the end of the annealing (ScheduleConfig.anneal_kimg)
    eps: float = 1e-8
    lr_schedule: str = option(
        CONTROLS,
        "Learning rate over the run, a factor on --glr/--dlr: constant, cosine (down to --lr-min-ratio at --kimg) or "
        "step (x --lr-gamma at each of --lr-steps).",
        default="constant",
        choices=LR_SCHEDULES,
    )
    lr_warmup_kimg: float = option(
        CONTROLS,
        "Ramp the learning rate linearly from 0 over this many kimg.",
        default=0.0,
        range=NON_NEGATIVE,
        must=">= 0 kimg; use 0 for no warm-up",
    )
    lr_min_ratio: float = option(
        CONTROLS,
        "--lr-schedule cosine: the final rate as a fraction of the base rate.",
        default=0.0,
        range=FRACTION,
        must="in [0, 1] (a fraction of the base rate)",
    )
    lr_horizon_kimg: float | None = None  # cosine: where it reaches the end (the run's --kimg when resolved)
    lr_steps: tuple[float, ...] = option(
        CONTROLS,
        "--lr-schedule step: increasing kimg at which the rate is multiplied by --lr-gamma.",
        default=(),
        kind=str,
        metavar="KIMG,KIMG",
    )
    lr_gamma: float = option(
        CONTROLS,
        "--lr-schedule step: the factor at each step.",
        default=0.1,
        range=Range(0, 1, low_open=True),
        must="in (0, 1] (the factor at each of --lr-steps), e.g. 0.1",
    )
    freeze_d: int = option(
        CONTROLS,
        "Freeze D's first N layers counted from the input (FreezeD, Mo et al. 2020; the official --freezed): they get "
        "no gradient, no optimiser state and no regularisation. For fine-tuning on little data.",
        default=0,
        range=Range(0, 64),
    )
    freeze_g_mapping: bool = option(
        CONTROLS,
        "Freeze G's mapping network (z to w, and the class embedding): no gradient, no optimiser state, so W stays "
        "the pretrained model's latent space. For fine-tuning.",
        default=False,
    )
    clip_grad_g: float | None = option(
        CONTROLS, "As --clip-grad, for G only (overrides it).", default=None, range=POSITIVE, must=GRADIENT_NORM
    )
    clip_grad_d: float | None = option(
        CONTROLS, "As --clip-grad, for D only (overrides it).", default=None, range=POSITIVE, must=GRADIENT_NORM
    )


@dataclass(frozen=True, kw_only=True)
class ScheduleConfig:
    """Progress in images: every length here is counted in kimg and is a whole number of global batches (a length
    typed otherwise is rounded up to one)."""

    batch: int = option(CONFIGURATION, "Global batch size.", range=BATCHES, preset=True)
    batch_gpu: int = option(
        CONFIGURATION,
        "Micro-batch per device; smaller than batch/GPUs means accumulation.",
        range=BATCHES,
        shown_default="batch/GPUs",
        maths=False,
    )
    kimg: float = option(
        CONFIGURATION, "Train this long (rounded up to whole batches).", range=POSITIVE, preset=True, maths=False
    )
    tick_kimg: float = option(
        OUTPUT,
        "kimg per status line (rounded up to whole batches).",
        flag="--tick",
        range=POSITIVE,
        preset=True,
        maths=False,
    )
    snap: int = option(OUTPUT, "Ticks per snapshot and checkpoint.", range=TICKS, preset=True, maths=False)
    ema_kimg: float
    ema_rampup: float | None = None  # the half-life is at most this x the images seen so far; None: no ramp-up
    # R3GAN's schedules (Huang et al. 2024, the released configurations): over this many kimg the learning rate
    # (to lr_min_ratio), gamma (to gamma_final) and Adam's beta2 (to beta2_final) go from their start values, and the
    # EMA half-life (to ema_kimg) and --aug fixed's p (to --aug-p) from 0, along a half cosine; constant after it.
    # None: nothing is annealed.
    anneal_kimg: float | None = None
    seed: int = option(CONFIGURATION, "Weights, data order, latents.", default=0, range=SEEDS)
    d_warmup_kimg: float = option(
        CONTROLS,
        "Train only D for this many kimg before G starts.",
        default=0.0,
        range=NON_NEGATIVE,
        must=">= 0 kimg; use 0 for no D-only warm-up",
    )
    d_steps: int = option(
        CONTROLS, "D steps per G step.", default=1, range=STEPS, must="from 1 to 1000 D steps per G step"
    )
    grow_from: int = option(
        CONTROLS, "--grow: the resolution training starts at (8 to the data's, a power of two).", default=8
    )
    grow_kimg: float = option(
        CONTROLS,
        "--grow: kimg at each resolution before the next fades in, and kimg of each fade (ProGAN's 600).",
        default=600.0,
        range=POSITIVE,
        must="> 0 kimg, e.g. 600 (ProGAN)",
    )
    # The lengths as typed that were not whole batches and were rounded up (one line each, printed at the start and
    # by --dry-run); the fields above hold the rounded values, which the run trains, hashes and resumes with.
    rounded: tuple[str, ...] = setting((), maths=False)


@dataclass(frozen=True, kw_only=True)
class PrecisionConfig:
    """The numeric policy: what precision the networks compute in; fp32 master weights always."""

    # One of PRECISIONS once the options are resolved: `auto`, the default, becomes one of them there, with its reason.
    mode: str = option(
        PRECISION,
        "fp16 needs CUDA; bf16 is the simple fast choice on recent GPUs; auto: bf16 on Ampere+ GPUs, else fp32 (a "
        "continued run keeps its mode).",
        default=AUTO_PRECISION,
        flag="--precision",
        choices=(AUTO_PRECISION, *PRECISIONS),
    )
    # The official recipe's fp16 layers: the networks run their `fp16_res` highest resolutions in float16 with
    # activations clamped to +-conv_clamp (StyleGAN2-ADA App. D); 0 runs fp16 by autocast instead.
    fp16_res: int = option(
        PRECISION,
        "Official recipe: run the N highest resolutions in fp16 with clamping (needs --precision fp16). Under "
        f"--precision fp16 the stylegan3 presets run {PRESETS['stylegan3-t'].fp16_res}, the others 0 (autocast).",
        default=0,
        range=Range(0, MAX_FP16_RES),
        preset=True,
    )
    conv_clamp: int | None = None
    # Why `mode` has its value when --precision auto chose it (printed at the start and by --dry-run), else "".
    auto_reason: str = setting("", maths=False)


@dataclass(frozen=True, kw_only=True)
class RuntimeConfig:
    """Where and how the step runs: speed, memory and reproducibility switches, none of which changes the maths."""

    device: str = option(PRECISION, "Where to train.", default="auto", choices=DEVICE_CHOICES)
    # The torch.compile mode of the main phases' forwards (G's synthesis, D); the regularisation phases stay eager, as
    # they differentiate gradients, which compiled graphs do not. `--compile` alone is `default` (it was a switch).
    compile: str = option(
        PRECISION,
        "torch.compile the main phases' forwards (R1 and path length stay eager) in this mode: default; max-autotune "
        "(slower to compile, tunes its kernels; on CUDA it also replays CUDA graphs); reduce-overhead (CUDA graphs: "
        "less launch overhead, for small batches; CUDA only). --compile alone is default.",
        default=COMPILE_OFF,
        choices=COMPILE_MODES,
        bare="default",
    )
    # Which implementation runs the fused ops (bias + activation, FIR resampling): the same maths either way, so a run
    # may continue with another choice (ganforge.devices.pick_kernels says what `auto` picks and why).
    kernels: str = option(
        PRECISION,
        "Fused ops: triton = Triton kernels compiled at run time (CUDA); reference = plain PyTorch; auto: triton on "
        "CUDA where Triton is installed and --compile is off, else reference.",
        default="auto",
        choices=KERNEL_CHOICES,
    )
    channels_last: bool = option(PRECISION, "channels_last memory format.", default=False)
    deterministic: bool = option(
        PRECISION, "Deterministic GPU kernels (bitwise-reproducible on GPU; CPU always is).", default=False
    )
    # Recompute the activations of G's synthesis blocks and D's blocks in backward instead of keeping them: less
    # memory for more compute, the same gradients (Chen et al. 2016, gradient checkpointing).
    grad_checkpoint: bool = option(
        PRECISION,
        "Recompute G's synthesis blocks and D's blocks in backward instead of storing their activations: less memory "
        "(larger --batch-gpu or resolution), more time, the same gradients (StyleGAN2 G).",
        default=False,
    )
    # Gradients are summed over ranks in buckets of this many MiB, each started as soon as backward has filled it
    # (overlapping communication with computation); 0 sums them all in one all-reduce after backward.
    allreduce_bucket_mb: float = option(
        PRECISION,
        "With several processes, sum gradients in buckets of this many MiB started during backward; 0: one all-reduce "
        "after backward.",
        default=25.0,
        range=NON_NEGATIVE,
    )

    @property
    def compiling(self) -> bool:
        """torch.compile is on, in any mode."""
        return self.compile != COMPILE_OFF


@dataclass(frozen=True, kw_only=True)
class AugmentConfig:
    """Augmentation of every image D sees. `ada` (Karras et al. 2020, Sec. 3) adjusts p toward `target`; `fixed`
    uses the same pipeline at p = `p`; `diffaug` is DiffAugment (Zhao et al. 2020) with `diffaug_policy`."""

    mode: str = option(
        AUGMENTATION,
        "What augments every image D sees: ada adapts p to D's overfitting, fixed keeps p at --aug-p, diffaug is "
        "DiffAugment (--diffaug-policy), noaug is none. The r3gan presets use fixed.",
        default="ada",
        flag="--aug",
        choices=AUGMENTS,
    )
    target: float = option(
        AUGMENTATION,
        "ADA target for E[sign(D(real))].",
        default=0.6,
        range=Range(0, 1, low_open=True, high_open=True),
    )
    # p can go from 0 to 1 in this many kimg (the paper's adjustment speed, Sec. 2.4).
    ada_kimg: float = option(
        AUGMENTATION, "ADA speed: p can go from 0 to 1 in this many kimg.", default=500.0, range=POSITIVE
    )
    pipe: str = option(
        AUGMENTATION,
        "ADA's transforms for ada and fixed: bgc (blit, geometric, colour), bgcc (and cutout: R3GAN's) or bgcfnc "
        "(and filter, noise, cutout).",
        default="bgc",
        flag="--aug-pipe",
        choices=AUGMENT_PIPES,
    )
    # D steps between adjustments of p (the paper's N = 4, Sec. 2.4).
    ada_interval: int = option(
        AUGMENTATION,
        "ADA adjusts p every this many D steps.",
        default=4,
        range=TICKS,
        must="a positive number of D steps (up to 10^6); the paper uses 4",
    )
    p: float = option(
        AUGMENTATION,
        "--aug fixed: the probability of each transform (the r3gan presets anneal p from 0 to it).",
        default=0.0,
        flag="--aug-p",
        range=FRACTION,
        must="a probability in [0, 1]",
    )
    diffaug_policy: str = option(
        AUGMENTATION,
        f"--aug diffaug: comma-separated subset of {','.join(DIFFAUG_OPS)}.",
        default="color,translation,cutout",
    )


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """Output, resume, retention and monitoring; none of it changes the training maths."""

    outdir: str = option(OUTPUT, "Where run folders go.", required=True)
    resume: str = option(
        CHECKPOINTS,
        "auto: continue this command's run in OUTDIR (the same options, else the same training maths and data; "
        "--dry-run says which); new: start a new run; RUNDIR: continue that run folder in place; CKPT: continue "
        "from a checkpoint folder; FILE: fine-tune a pretrained model (an NVlabs .pkl, a rosinality .pt, a snapshot, "
        "or G.safetensors,D.safetensors): its architecture and weights, ADA's p, progress from 0.",
        default="auto",
    )
    # The SHA-256 of each pretrained file the run started from (--resume FILE[,FILE]), recorded with its path.
    resume_sha256: tuple[str, ...] = setting(())
    keep_last: int = option(CHECKPOINTS, "Checkpoints to keep.", default=3, range=TICKS)
    keep_every: float | None = option(
        CHECKPOINTS, "Also keep one checkpoint per this many kimg, for good.", default=None, range=POSITIVE
    )
    keep_max_age: float | None = option(
        CHECKPOINTS, "Also keep checkpoints younger than this many days.", default=None, range=POSITIVE
    )
    allow_config_change: bool = option(
        CHECKPOINTS, "Resume even if the training maths changed (the differences are listed).", default=False
    )
    metrics: tuple[str, ...] = option(
        OUTPUT,
        f"Comma-separated metrics of G_ema at each snapshot, any of {', '.join(METRIC_NAMES)} (see `ganforge "
        "metrics`).",
        default=(),
        kind=str,
    )
    metrics_gen: int | None = option(
        OUTPUT,
        "Fakes per --metrics measurement at a snapshot, instead of each metric's full count: a cheaper, noisier "
        "value (the report marks it reduced), enough to compare runs with one another (ganforge sweep).",
        default=None,
        range=Range(2, 10**7, whole=True),
        metavar="N",
        shown_default="the metric's own (50k for kid50k_full)",
    )
    vgg16: str | None = option(
        OUTPUT,
        "--metrics ppl_*: NVlabs' vgg16.pt, the VGG16 LPIPS TorchScript of the official projector and PPL (not "
        "downloaded).",
        default=None,
        metavar="PATH",
    )
    inception_classifier: str | None = option(
        OUTPUT,
        "--metrics is50k: NVlabs' inception-2015-12-05.pt, the official metrics' Inception TorchScript with class "
        "probabilities (not downloaded).",
        default=None,
        metavar="PATH",
    )
    report: bool = option(
        OUTPUT,
        "Do not rewrite RUN/report.html at each snapshot (`ganforge report RUN` writes it on demand).",
        default=True,
        flag="--no-report",
        negated=True,
    )
    monitor_interval: float = option(
        MONITORING,
        "Seconds between GPU/CPU telemetry samples (per-tick statistics, status line, alerts); 0: off.",
        default=2.0,
        range=NON_NEGATIVE,
        metavar="SECONDS",
    )
    profile: int = option(
        MONITORING,
        "Profile STEPS training steps once, after the first tick, into RUN/profile/ (trace and summary.txt), longer "
        "until every phase ran once; 0: none. A small trace of operator times; --profile-detail records more.",
        default=0,
        range=Range(0, 10**4),
        metavar="STEPS",
    )
    profile_detail: bool = option(
        MONITORING,
        "With --profile: also record input shapes, memory events and Python stacks (a trace about 3x larger).",
        default=False,
    )
    tracker: tuple[str, ...] = option(
        TRACKING,
        "Also send the run to these trackers, comma-separated: mlflow, wandb (`pip install 'ganforge[mlflow]'` or "
        "'[wandb]'); rank 0, from a background thread. Their environment variables apply (MLFLOW_TRACKING_URI, "
        "WANDB_MODE=offline, WANDB_PROJECT, ...).",
        default=(),
        kind=str,
        metavar="NAMES",
    )
    tracker_uri: str | None = option(
        TRACKING,
        "The trackers' server: MLflow's tracking URI, W&B's base URL. Default: their environment, else MLflow "
        "files in RUN/mlruns and W&B's cloud.",
        default=None,
        metavar="URI",
    )
    tracker_project: str | None = option(
        TRACKING,
        "MLflow experiment or W&B project. Default: MLFLOW_EXPERIMENT_NAME or WANDB_PROJECT, else ganforge.",
        default=None,
        metavar="NAME",
    )
    tracker_run_name: str | None = option(
        TRACKING, "The run's name in the trackers. Default: the run folder's name.", default=None, metavar="NAME"
    )
    tracker_artifacts: str = option(
        TRACKING,
        "Files the trackers also get: none, snapshots (each snapshot file), checkpoints (snapshots and each "
        "checkpoint's files). report.html is sent at the end either way.",
        default="none",
        choices=TRACKER_ARTIFACTS,
    )
