"""Training configuration: a tree of frozen dataclasses, and what a checkpoint compares.

A `Config` is what `ganforge.train.resolver.resolve` makes of the command-line options; it is written as
`config.json` into the run directory, and `Config.to_json()` / `Config.from_json()` round-trip it. Every default of a
configuration field is stated once: here, on the field of its section, or in the preset table (`ganforge.presets`)
when it depends on `--cfg`. This module imports neither torch nor click so that it stays cheap to import
(`ganforge --help` reads it).
"""

import dataclasses
import hashlib
import json
from dataclasses import dataclass

PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
AUTO_PRECISION = "auto"  # --precision auto: one of PRECISIONS chosen for the hardware when the options are resolved
AUGMENTS = ("ada", "diffaug", "fixed", "noaug")
AUGMENT_PIPES = ("bgc", "bgcfnc")  # ADA's transform groups (ganforge.train.augment.PRESETS)
DIFFAUG_OPS = ("color", "translation", "cutout")
LR_SCHEDULES = ("constant", "cosine", "step")


@dataclass(frozen=True)
class DataConfig:
    """Where the images come from. `resolution`, `channels`, `label_dim` are read from the dataset."""

    path: str
    name: str
    resolution: int
    channels: int
    label_dim: int
    cond: bool = False
    mirror: bool = False
    workers: int = 2


@dataclass(frozen=True)
class ModelConfig:
    """Generator and discriminator architecture (both built from these fields)."""

    z_dim: int
    w_dim: int
    mapping_layers: int
    channel_base: int
    channel_max: int
    mbstd_group: int
    num_fp16_res: int = 0
    conv_clamp: int | None = None
    generator: str = "stylegan2"  # "stylegan2", "stylegan3-t" or "stylegan3-r"
    synthesis_layers: int | None = None  # StyleGAN3's layers between the Fourier input and toRGB (14 in the paper)


@dataclass(frozen=True)
class LossConfig:
    """Loss weights and lazy-regularisation intervals (Karras et al. 2020b "StyleGAN2", Sec. 3.1 and 3.2)."""

    gamma: float
    r1_interval: int = 16
    pl_weight: float = 2.0
    pl_interval: int = 4
    pl_decay: float = 0.01
    pl_batch_shrink: int = 2
    style_mixing: float = 0.9
    blur_sigma: float = 0.0  # discriminator blur at the start, fading linearly to 0 (StyleGAN3 App. D)
    blur_fade_kimg: float = 0.0


@dataclass(frozen=True)
class OptimConfig:
    """Adam for both networks (betas 0 and 0.99, StyleGAN2 App. B). `g_lr`/`d_lr` are the base rates that the
    learning-rate schedule scales (train/lr_schedule.py); gradient clipping is off, as in the official recipe."""

    g_lr: float
    d_lr: float
    beta1: float = 0.0
    beta2: float = 0.99
    eps: float = 1e-8
    lr_schedule: str = "constant"  # constant | cosine | step
    lr_warmup_kimg: float = 0.0  # linear ramp from 0 to the base rate over this many kimg
    lr_min_ratio: float = 0.0  # cosine: the rate ends at base x this
    lr_horizon_kimg: float | None = None  # cosine: where it reaches the end (the run's --kimg when resolved)
    lr_steps: tuple[float, ...] = ()  # step: kimg at which the rate is multiplied by lr_gamma
    lr_gamma: float = 0.1
    clip_grad_g: float | None = None  # largest global gradient norm of G per step; None = no clipping
    clip_grad_d: float | None = None


@dataclass(frozen=True)
class ScheduleConfig:
    """Progress in images: every length here is counted in kimg and is a whole number of global batches."""

    batch: int
    batch_gpu: int
    kimg: float
    tick_kimg: float
    snap: int
    ema_kimg: float
    ema_rampup: float | None
    seed: int = 0
    d_warmup_kimg: float = 0.0  # train only D for this many kimg before G starts
    d_steps: int = 1  # D updates (steps) per G update


@dataclass(frozen=True)
class PrecisionConfig:
    """Numeric precision and speed switches; fp32 master weights always."""

    # One of PRECISIONS once the options are resolved: `auto`, the default, becomes one of them there, with its reason.
    precision: str = AUTO_PRECISION
    compile: bool = False
    channels_last: bool = False
    deterministic: bool = False
    # Recompute the activations of G's synthesis blocks and D's blocks in backward instead of keeping them: less
    # memory for more compute, the same gradients (Chen et al. 2016, gradient checkpointing).
    grad_checkpoint: bool = False
    device: str = "auto"
    # Gradients are summed over ranks in buckets of this many MiB, each started as soon as backward has filled it
    # (overlapping communication with computation); 0 sums them all in one all-reduce after backward.
    allreduce_bucket_mb: float = 25.0
    # Why `precision` has its value when --precision auto chose it (printed at the start and by --dry-run), else "".
    auto_reason: str = ""


@dataclass(frozen=True)
class AugmentConfig:
    """Augmentation of every image D sees. `ada` (Karras et al. 2020, Sec. 3) adjusts p toward `target`; `fixed`
    uses the same pipeline at p = `p`; `diffaug` is DiffAugment (Zhao et al. 2020) with `diffaug_policy`."""

    mode: str = "ada"
    target: float = 0.6
    ada_kimg: float = 500.0  # p can go from 0 to 1 in this many kimg (the paper's adjustment speed, Sec. 2.4)
    pipe: str = "bgc"  # ADA transform groups: bgc, or bgcfnc with filter, noise and cutout (App. B)
    ada_interval: int = 4  # D steps between adjustments of p (the paper's N = 4, Sec. 2.4)
    p: float = 0.0  # `fixed`: the probability of each transform
    diffaug_policy: str = "color,translation,cutout"


@dataclass(frozen=True)
class RunConfig:
    """Output, resume, retention and monitoring; none of it changes the training maths."""

    outdir: str
    resume: str = "auto"
    keep_last: int = 3
    keep_every: float | None = None
    keep_max_age: float | None = None
    allow_config_change: bool = False
    metrics: tuple[str, ...] = ()
    report: bool = True  # rewrite report.html at each snapshot
    monitor_interval: float = 2.0  # seconds between hardware telemetry samples; 0 = off
    profile: int = 0  # training steps to profile once, after a tick of warm-up; 0 = none


@dataclass(frozen=True)
class Config:
    """The resolved training configuration, written to `config.json` in the run directory."""

    preset: str  # the --cfg row the other values started from
    world_size: int
    data: DataConfig
    model: ModelConfig
    loss: LossConfig
    optim: OptimConfig
    schedule: ScheduleConfig
    precision: PrecisionConfig
    augment: AugmentConfig
    run: RunConfig

    @property
    def accumulation(self) -> int:
        """Micro-batches per rank per step: batch = batch_gpu x world_size x accumulation."""
        return self.schedule.batch // (self.schedule.batch_gpu * self.world_size)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    @classmethod
    def from_dict(cls, d: dict) -> "Config":
        """From `to_dict`'s layout; also reads config.json files written before the preset field had its name."""
        d = upgrade(d)
        kinds = {f.name: f.type for f in dataclasses.fields(cls)}
        assert set(d) == set(kinds), f"config keys {sorted(d)} != {sorted(kinds)}"
        kwargs = {name: kinds[name](**value) if isinstance(value, dict) else value for name, value in d.items()}
        kwargs["run"] = dataclasses.replace(kwargs["run"], metrics=tuple(kwargs["run"].metrics))
        kwargs["optim"] = dataclasses.replace(kwargs["optim"], lr_steps=tuple(kwargs["optim"].lr_steps))
        return cls(**kwargs)

    @classmethod
    def from_json(cls, text: str) -> "Config":
        return cls.from_dict(json.loads(text))


def upgrade(config_dict: dict) -> dict:
    """A config dict (nested, or flattened as checkpoints store it) in today's layout: files written before the
    preset field was named `preset` call it `cfg`; run folders and checkpoints from then stay readable."""
    if "cfg" not in config_dict:
        return config_dict
    return {("preset" if key == "cfg" else key): value for key, value in config_dict.items()}


# Fields that may change between a checkpoint and its resumed run without changing the training maths.
NON_MATHS_FIELDS = frozenset({
    "data.path", "data.workers", "schedule.kimg", "schedule.tick_kimg", "schedule.snap", "schedule.batch_gpu",
    "precision.compile", "precision.channels_last", "precision.deterministic", "precision.device", "world_size",
    "precision.allreduce_bucket_mb", "precision.auto_reason", "precision.grad_checkpoint",
})  # fmt: skip


def flatten(d: dict, prefix: str = "") -> dict:
    """{"a": {"b": 1}} -> {"a.b": 1}; tuples become lists, as they come back from JSON (a checkpoint's record)."""
    out = {}
    for key, value in d.items():
        if isinstance(value, dict):
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = list(value) if isinstance(value, tuple) else value
    return out


def maths_fields(config_dict: dict) -> dict:
    """The flattened fields that define the training maths (everything but output, resume and speed options)."""
    flat = flatten(upgrade(config_dict))
    return {k: v for k, v in flat.items() if not k.startswith("run.") and k not in NON_MATHS_FIELDS}


def config_hash(config: Config) -> str:
    """SHA-256 of the training-maths fields, stored in every checkpoint."""
    text = json.dumps(maths_fields(config.to_dict()), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def field_default(section, name: str):
    """The default of field `name` of a Config section dataclass (the one place it is written)."""
    return {field.name: field.default for field in dataclasses.fields(section)}[name]


def field_defaults() -> dict:
    """Flattened `section.field` -> default, for every Config field that has one."""
    defaults = {}
    for section in dataclasses.fields(Config):
        if dataclasses.is_dataclass(section.type):
            for field in dataclasses.fields(section.type):
                if field.default is not dataclasses.MISSING:
                    defaults[f"{section.name}.{field.name}"] = field.default
    return defaults


def maths_differences(old: dict, new: dict) -> list[str]:
    """Human-readable `field: old -> new` lines for the maths fields that differ. A field the old config does not
    have (it was added to ganforge later) counts as its default, which is what that older run trained with."""
    a, b = maths_fields(old), maths_fields(new)
    a = {k: v for k, v in flatten(field_defaults()).items() if k in b} | a
    return [f"{k}: {a.get(k)!r} -> {b.get(k)!r}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def lazy_ratio(interval: int) -> float:
    """Lazy regularisation runs every `interval` steps, so the optimiser sees interval+1 updates where it would see
    interval; lr and betas are corrected by this ratio (StyleGAN2 App. C)."""
    return interval / (interval + 1)


def describe_derived(cfg: Config) -> list[str]:
    """The values the preset and the flags implied, one line each, for the start-of-run printout: few dials are
    exposed and the rest is derived, so the user sees what was derived."""
    s, lo = cfg.schedule, cfg.loss
    return [
        f"batch {s.batch} = {s.batch_gpu} per micro-batch x {cfg.world_size} process(es) x {cfg.accumulation} "
        f"accumulation step(s)",
        f"R1 gamma {lo.gamma:g} every {lo.r1_interval} steps; path length weight {lo.pl_weight:g} every "
        f"{lo.pl_interval} steps",
        f"lazy regularisation: G lr x {lazy_ratio(lo.pl_interval):.4f}, D lr x {lazy_ratio(lo.r1_interval):.4f} "
        f"(betas raised to the same power)",
        f"EMA half-life {s.ema_kimg:g} kimg, ramp-up {s.ema_rampup}",
        f"networks: {cfg.model.generator}, channel base {cfg.model.channel_base}, max {cfg.model.channel_max}, mapping "
        f"{cfg.model.mapping_layers} layers, minibatch-stddev group {cfg.model.mbstd_group}",
        f"{s.kimg:g} kimg in ticks of {s.tick_kimg:g} kimg; snapshot + checkpoint every {s.snap} ticks",
        *_describe_controls(cfg),
        _describe_augment(cfg.augment),
        *_preset_notes(cfg),
        *_describe_auto(cfg.precision),
        *_describe_memory(cfg.precision),
    ] + ([f"D blur sigma {lo.blur_sigma:g} fading to 0 over {lo.blur_fade_kimg:g} kimg"] if lo.blur_sigma else [])


def _describe_controls(cfg: Config) -> list[str]:
    """The learning-rate schedule, clipping and two-phase training, only where they are on."""
    o, s = cfg.optim, cfg.schedule
    lines = []
    warmup = f" after a linear warm-up of {o.lr_warmup_kimg:g} kimg" if o.lr_warmup_kimg else ""
    if o.lr_schedule == "cosine":
        lines.append(f"learning rate: cosine from the base rate to x{o.lr_min_ratio:g} at {o.lr_horizon_kimg:g} "
                     f"kimg{warmup}")  # fmt: skip
    elif o.lr_schedule == "step":
        lines.append(f"learning rate: x{o.lr_gamma:g} at each of {', '.join(f'{k:g}' for k in o.lr_steps)} kimg"
                     f"{warmup}")  # fmt: skip
    elif warmup:
        lines.append(f"learning rate: constant{warmup}")
    for net, norm in (("G", o.clip_grad_g), ("D", o.clip_grad_d)):
        if norm is not None:
            lines.append(f"gradient clipping: {net}'s global gradient norm capped at {norm:g}")
    if s.d_warmup_kimg or s.d_steps > 1:
        lines.append(f"phases: D alone for {s.d_warmup_kimg:g} kimg, then {s.d_steps} D step(s) per G step")
    return lines


def _describe_memory(p: PrecisionConfig) -> list[str]:
    if not p.grad_checkpoint:
        return []
    return ["gradient checkpointing: G's synthesis blocks and D's blocks recompute their activations in backward "
            "(less memory, one more forward of each block per backward; the same gradients)"]  # fmt: skip


def _describe_auto(p: PrecisionConfig) -> list[str]:
    return [f"precision {p.precision} (auto: {p.auto_reason})"] if p.auto_reason else []


def _describe_augment(a: AugmentConfig) -> str:
    if a.mode == "ada":
        return (f"augmentation: ADA pipe {a.pipe}, target {a.target:g}, p adjusted every {a.ada_interval} D steps, "
                f"0 to 1 in {a.ada_kimg:g} kimg")  # fmt: skip
    if a.mode == "fixed":
        return f"augmentation: pipe {a.pipe} at fixed p {a.p:g}"
    if a.mode == "diffaug":
        return f"augmentation: DiffAugment {a.diffaug_policy} on every image D sees"
    return "augmentation: none"


def auto_batch(resolution: int, world_size: int) -> int:
    """The `auto` preset's global batch (Karras et al. 2020, App. D): 4096 / resolution images per process, at most
    32 per process and 64 in all, at least one per process."""
    return max(min(world_size * min(4096 // resolution, 32), 64), world_size)


def _preset_notes(cfg: Config) -> list[str]:
    """Where a preset knowingly departs from what a reader of the official code might expect."""
    notes = []
    derived_batch = auto_batch(cfg.data.resolution, cfg.world_size)
    if cfg.preset == "auto" and cfg.schedule.batch != derived_batch:
        notes.append(f"--cfg auto with --batch {cfg.schedule.batch}: gamma and the EMA half-life are those derived "
                     f"for the auto batch {derived_batch}, as in the official train.py, which derives them before "
                     "--batch replaces the batch; pass --gamma to change gamma")  # fmt: skip
    if cfg.preset == "cifar":
        notes.append("--cfg cifar: D is the residual discriminator; the official cifar configuration uses the plain "
                     "('orig') one, which ganforge does not build (see README, Presets)")  # fmt: skip
    return notes
