"""The options of `ganforge train`: the typed `TrainOptions` the command builds, and its click options grouped by
purpose. Imports only click, ganforge.config and ganforge.presets, so `ganforge --help` stays fast.

An option left out is None (False for a switch): `ganforge.train.resolver.resolve` then takes the value from the
preset, from the default of its `Config` field, or derives it. No default is written here; the help texts name the
one place each comes from (`--dry-run` prints what every option resolved to).
"""

from dataclasses import dataclass

import click

from ganforge.config import (
    AUGMENT_PIPES,
    AUGMENTS,
    AUTO_PRECISION,
    DIFFAUG_OPS,
    LR_SCHEDULES,
    PRECISIONS,
    AugmentConfig,
    DataConfig,
    ModelConfig,
    OptimConfig,
    PrecisionConfig,
    RunConfig,
    ScheduleConfig,
    field_default,
)
from ganforge.presets import DEFAULT_PRESET, PRESETS


@dataclass(frozen=True)
class TrainOptions:
    """What the user asked `ganforge train` for, one field per option (the flag is the field name with dashes;
    `--cfg` is `preset`). None means "not given"."""

    data: str
    outdir: str
    cond: bool = False
    mirror: bool = False
    workers: int | None = None
    preset: str | None = None
    kimg: float | None = None
    batch: int | None = None
    batch_gpu: int | None = None
    gamma: float | None = None
    glr: float | None = None
    dlr: float | None = None
    seed: int | None = None
    aug: str | None = None
    target: float | None = None
    ada_kimg: float | None = None
    aug_pipe: str | None = None
    ada_interval: int | None = None
    aug_p: float | None = None
    diffaug_policy: str | None = None
    lr_schedule: str | None = None
    lr_warmup_kimg: float | None = None
    lr_min_ratio: float | None = None
    lr_steps: str | None = None
    lr_gamma: float | None = None
    d_warmup_kimg: float | None = None
    d_steps: int | None = None
    clip_grad: float | None = None
    clip_grad_g: float | None = None
    clip_grad_d: float | None = None
    precision: str | None = None
    fp16_res: int | None = None
    compile: bool = False
    channels_last: bool = False
    deterministic: bool = False
    grad_checkpoint: bool = False
    device: str | None = None
    allreduce_bucket_mb: float | None = None
    tick: float | None = None
    snap: int | None = None
    metrics: str | None = None
    no_report: bool = False
    dry_run: bool = False
    resume: str | None = None
    keep_last: int | None = None
    keep_every: float | None = None
    keep_max_age: float | None = None
    allow_config_change: bool = False
    monitor_interval: float | None = None
    profile: int | None = None


def shown_default(section, name: str) -> str:
    """The help suffix naming the default of Config field `section.name`, read from the field itself."""
    value = field_default(section, name)
    if isinstance(value, tuple):
        value = ", ".join(value) or "none"
    return f"  [default: {value}]"


_PRESET = "  [default: from --cfg]"
_GROUPS: dict[str, list] = {}


def _option(group: str, *names, **kwargs):
    """click.option that also records which help section the option belongs to."""
    _GROUPS.setdefault(group, []).append(names[0])
    return click.option(*names, **kwargs)


TRAIN_OPTIONS = [
    _option("Data", "--data", type=click.Path(exists=False), required=True, help="Dataset: folder, zip or archive."),
    _option("Data", "--cond", is_flag=True, help="Condition on the dataset's class labels."),
    _option("Data", "--mirror", is_flag=True, help="Add x-flipped copies of the images."),
    _option("Data", "--workers", type=click.IntRange(min=0),
            help="DataLoader processes per GPU decoding a zip or folder (a fast-format dataset is read by a thread "
                 "of the training process instead)." + shown_default(DataConfig, "workers")),
    _option("Configuration", "--cfg", "preset", type=click.Choice(list(PRESETS)),
            help="Preset: auto derives batch, gamma and EMA from the resolution; stylegan3-t/-r train the alias-free "
                 "generator the same way; tiny and tiny3 are small CPU settings."
                 f"  [default: {DEFAULT_PRESET}]"),
    _option("Configuration", "--kimg", type=click.FloatRange(min=0, min_open=True), help="Train this long." + _PRESET),
    _option("Configuration", "--batch", type=click.IntRange(min=1), help="Global batch size." + _PRESET),
    _option("Configuration", "--batch-gpu", type=click.IntRange(min=1),
            help="Micro-batch per device; smaller than batch/GPUs means accumulation.  [default: batch/GPUs]"),
    _option("Configuration", "--gamma", type=click.FloatRange(min=0), help="R1 weight." + _PRESET),
    _option("Configuration", "--glr", type=click.FloatRange(min=0, min_open=True), help="G learning rate." + _PRESET),
    _option("Configuration", "--dlr", type=click.FloatRange(min=0, min_open=True), help="D learning rate." + _PRESET),
    _option("Configuration", "--seed", type=click.IntRange(min=0),
            help="Weights, data order, latents." + shown_default(ScheduleConfig, "seed")),
    _option("Augmentation", "--aug", type=click.Choice(AUGMENTS),
            help="What augments every image D sees: ada adapts p to D's overfitting, fixed keeps p at --aug-p, "
                 "diffaug is DiffAugment (--diffaug-policy), noaug is none." + shown_default(AugmentConfig, "mode")),
    _option("Augmentation", "--aug-pipe", type=click.Choice(AUGMENT_PIPES),
            help="ADA's transforms for ada and fixed: bgc (blit, geometric, colour) or bgcfnc (also filter, noise, "
                 "cutout)." + shown_default(AugmentConfig, "pipe")),
    _option("Augmentation", "--target", type=click.FloatRange(0, 1, min_open=True, max_open=True),
            help="ADA target for E[sign(D(real))]." + shown_default(AugmentConfig, "target")),
    _option("Augmentation", "--ada-kimg", type=click.FloatRange(min=0, min_open=True),
            help="ADA speed: p can go from 0 to 1 in this many kimg." + shown_default(AugmentConfig, "ada_kimg")),
    _option("Augmentation", "--ada-interval", type=int,
            help="ADA adjusts p every this many D steps (>= 1)." + shown_default(AugmentConfig, "ada_interval")),
    _option("Augmentation", "--aug-p", type=float,
            help="--aug fixed: the probability of each transform, in [0, 1]." + shown_default(AugmentConfig, "p")),
    _option("Augmentation", "--diffaug-policy",
            help=f"--aug diffaug: comma-separated subset of {','.join(DIFFAUG_OPS)}."
                 + shown_default(AugmentConfig, "diffaug_policy")),
    _option("Training controls", "--lr-schedule", type=click.Choice(LR_SCHEDULES),
            help="Learning rate over the run, a factor on --glr/--dlr: constant, cosine (down to --lr-min-ratio at "
                 "--kimg) or step (x --lr-gamma at each of --lr-steps)." + shown_default(OptimConfig, "lr_schedule")),
    _option("Training controls", "--lr-warmup-kimg", type=float,
            help="Ramp the learning rate linearly from 0 over this many kimg (>= 0)."
                 + shown_default(OptimConfig, "lr_warmup_kimg")),
    _option("Training controls", "--lr-min-ratio", type=float,
            help="--lr-schedule cosine: the final rate as a fraction of the base rate, in [0, 1]."
                 + shown_default(OptimConfig, "lr_min_ratio")),
    _option("Training controls", "--lr-steps", metavar="KIMG,KIMG",
            help="--lr-schedule step: increasing kimg at which the rate is multiplied by --lr-gamma."),
    _option("Training controls", "--lr-gamma", type=float,
            help="--lr-schedule step: the factor at each step, in (0, 1]." + shown_default(OptimConfig, "lr_gamma")),
    _option("Training controls", "--d-warmup-kimg", type=float,
            help="Train only D for this many kimg before G starts (>= 0)."
                 + shown_default(ScheduleConfig, "d_warmup_kimg")),
    _option("Training controls", "--d-steps", type=int,
            help="D steps per G step (>= 1)." + shown_default(ScheduleConfig, "d_steps")),
    _option("Training controls", "--clip-grad", type=float,
            help="Cap the global gradient norm of G and D at this value (> 0; 0.5 to 1 is usual).  [default: off]"),
    _option("Training controls", "--clip-grad-g", type=float, help="As --clip-grad, for G only (overrides it)."),
    _option("Training controls", "--clip-grad-d", type=float, help="As --clip-grad, for D only (overrides it)."),
    _option("Precision and speed", "--precision", type=click.Choice([AUTO_PRECISION, *PRECISIONS]),
            help="fp16 needs CUDA; bf16 is the simple fast choice on recent GPUs; auto: bf16 on Ampere+ GPUs and "
                 "CPUs with AMX/AVX512-BF16, else fp32 (a continued run keeps its mode)."
                 + shown_default(PrecisionConfig, "precision")),
    _option("Precision and speed", "--fp16-res", type=click.IntRange(min=0),
            help="Official recipe: run the N highest resolutions in fp16 with clamping (needs --precision fp16). "
                 f"Under --precision fp16 the stylegan3 presets run {PRESETS['stylegan3-t'].fp16_res}, the others "
                 f"{field_default(ModelConfig, 'num_fp16_res')} (autocast)." + _PRESET),
    _option("Precision and speed", "--compile", is_flag=True, help="torch.compile the main-phase forwards."),
    _option("Precision and speed", "--channels-last", is_flag=True, help="channels_last memory format."),
    _option("Precision and speed", "--deterministic", is_flag=True,
            help="Deterministic GPU kernels (bitwise-reproducible on GPU; CPU always is)."),
    _option("Precision and speed", "--grad-checkpoint", is_flag=True,
            help="Recompute G's synthesis blocks and D's blocks in backward instead of storing their activations: "
                 "less memory (larger --batch-gpu or resolution), more time, the same gradients (StyleGAN2 G)."),
    _option("Precision and speed", "--device", type=click.Choice(["auto", "cuda", "cpu"]),
            help="Where to train." + shown_default(PrecisionConfig, "device")),
    _option("Precision and speed", "--allreduce-bucket-mb", type=click.FloatRange(min=0),
            help="With several processes, sum gradients in buckets of this many MiB started during backward; 0: one "
                 "all-reduce after backward." + shown_default(PrecisionConfig, "allreduce_bucket_mb")),
    _option("Output", "--outdir", type=click.Path(file_okay=False), required=True, help="Where run folders go."),
    _option("Output", "--tick", type=click.FloatRange(min=0, min_open=True), help="kimg per status line." + _PRESET),
    _option("Output", "--snap", type=click.IntRange(min=1), help="Ticks per snapshot and checkpoint." + _PRESET),
    _option("Output", "--metrics",
            help="Comma-separated metrics of G_ema at each snapshot, e.g. fid50k_full (see `ganforge metrics`)."
                 + shown_default(RunConfig, "metrics")),
    _option("Output", "--no-report", is_flag=True,
            help="Do not rewrite RUN/report.html at each snapshot (`ganforge report RUN` writes it on demand)."),
    _option("Output", "--dry-run", is_flag=True, help="Print the resolved configuration and exit."),
    _option("Checkpoints", "--resume",
            help="auto: continue the newest matching run in OUTDIR; new: start a new run; PATH: a checkpoint "
                 "folder, or a snapshot (.safetensors, weights only: D, optimisers and progress start fresh), or "
                 "G.safetensors,D.safetensors (a snapshot and a discriminator file from `ganforge import`)."
                 + shown_default(RunConfig, "resume")),
    _option("Checkpoints", "--keep-last", type=click.IntRange(min=1),
            help="Checkpoints to keep." + shown_default(RunConfig, "keep_last")),
    _option("Checkpoints", "--keep-every", type=click.FloatRange(min=0, min_open=True),
            help="Also keep one checkpoint per this many kimg, for good."),
    _option("Checkpoints", "--keep-max-age", type=click.FloatRange(min=0, min_open=True),
            help="Also keep checkpoints younger than this many days."),
    _option("Checkpoints", "--allow-config-change", is_flag=True,
            help="Resume even if the training maths changed (the differences are listed)."),
    _option("Monitoring", "--monitor-interval", type=click.FloatRange(min=0), metavar="SECONDS",
            help="Seconds between GPU/CPU telemetry samples (per-tick statistics, status line, alerts); 0: off."
                 + shown_default(RunConfig, "monitor_interval")),
    _option("Monitoring", "--profile", type=click.IntRange(min=0), metavar="STEPS",
            help="Profile STEPS training steps once, after the first tick, into RUN/profile/ (trace and summary.txt);"
                 " 0: none." + shown_default(RunConfig, "profile")),
]  # fmt: skip


class GroupedCommand(click.Command):
    """A command whose --help lists options under section headings."""

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        records = {p.name: p.get_help_record(ctx) for p in self.get_params(ctx)}
        names_of = {p.opts[0]: p.name for p in self.get_params(ctx)}
        for group, flags in _GROUPS.items():
            with formatter.section(group):
                formatter.write_dl([records[names_of[f]] for f in flags if records.get(names_of[f])])
        grouped = {names_of[f] for flags in _GROUPS.values() for f in flags}
        rest = [rec for name, rec in records.items() if name not in grouped and rec]
        if rest:
            with formatter.section("Other"):
                formatter.write_dl(rest)


def train_options(function):
    """Apply every `ganforge train` option to a click command function."""
    for option in reversed(TRAIN_OPTIONS):
        function = option(function)
    return function
