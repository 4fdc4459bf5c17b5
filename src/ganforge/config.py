"""Training configuration: a tree of frozen dataclasses, the preset table, and what a checkpoint compares.

A `Config` is what `ganforge.train.resolver.resolve` makes of the command-line options; it is written as
`config.json` into the run directory, and `Config.to_json()` / `Config.from_json()` round-trip it. Every default of a
configuration field is stated once, here: on the field of its section, or in the preset table when it depends on
`--cfg`. This module imports neither torch nor click so that it stays cheap to import (`ganforge --help` reads it).
"""

import dataclasses
import hashlib
import json
from dataclasses import dataclass

PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
AUTO_PRECISION = "auto"  # --precision auto: one of PRECISIONS chosen for the hardware when the options are resolved
AUGMENTS = ("ada", "noaug")
DEFAULT_PRESET = "auto"


@dataclass(frozen=True, kw_only=True)
class Preset:
    """One row of the preset table. None in the first group means "derive it from the resolution" (the `auto` row,
    see `ganforge.train.resolver.derive`); None for `pl_weight` and `style_mixing` keeps LossConfig's default."""

    batch: int | None = None
    mbstd: int | None = None  # minibatch-stddev group size
    channel_base: int | None = None
    lr: float | None = None
    gamma: float | None = None
    ema_kimg: float | None = None
    ema_rampup: float | None = None
    mapping_layers: int
    kimg: float
    resolution: int | None = None  # the only resolution the preset is made for; None: any
    channel_max: int = 512
    z_dim: int = 512
    pl_weight: float | None = None
    style_mixing: float | None = None
    tick_kimg: float = 4.0
    snap: int = 50


# The official configurations (Karras et al. 2020, "Training GANs with limited data", App. D and its released
# `cfg_specs`): batch, minibatch-stddev group, channel base (fmaps x 32768), learning rate, R1 gamma, EMA half-life in
# kimg, EMA ramp-up, mapping depth. `auto` derives most of them from the resolution; `tiny` is a small, fast CPU
# setting.
PRESETS = {
    "auto": Preset(ema_rampup=0.05, mapping_layers=2, kimg=25000),
    "stylegan2": Preset(batch=32, mbstd=4, channel_base=32768, lr=0.002, gamma=10.0, ema_kimg=10.0, mapping_layers=8,
                        kimg=25000),
    "paper256": Preset(batch=64, mbstd=8, channel_base=16384, lr=0.0025, gamma=1.0, ema_kimg=20.0, mapping_layers=8,
                       kimg=25000, resolution=256),
    "paper512": Preset(batch=64, mbstd=8, channel_base=32768, lr=0.0025, gamma=0.5, ema_kimg=20.0, mapping_layers=8,
                       kimg=25000, resolution=512),
    "paper1024": Preset(batch=32, mbstd=4, channel_base=32768, lr=0.002, gamma=2.0, ema_kimg=10.0, mapping_layers=8,
                        kimg=25000, resolution=1024),
    "cifar": Preset(batch=64, mbstd=32, channel_base=32768, lr=0.0025, gamma=0.01, ema_kimg=500.0, ema_rampup=0.05,
                    mapping_layers=2, kimg=100000, resolution=32, pl_weight=0.0, style_mixing=0.0),
    "tiny": Preset(batch=16, mbstd=4, channel_base=512, lr=0.0025, gamma=0.05, ema_kimg=1.0, ema_rampup=0.05,
                   mapping_layers=2, kimg=40, channel_max=64, z_dim=64, tick_kimg=0.8, snap=5),
}  # fmt: skip


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


@dataclass(frozen=True)
class OptimConfig:
    """Adam for both networks (betas 0 and 0.99, StyleGAN2 App. B)."""

    g_lr: float
    d_lr: float
    beta1: float = 0.0
    beta2: float = 0.99
    eps: float = 1e-8


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


@dataclass(frozen=True)
class PrecisionConfig:
    """Numeric precision and speed switches; fp32 master weights always."""

    precision: str = "fp32"  # one of PRECISIONS; `auto` is resolved into one of them before a Config exists
    compile: bool = False
    channels_last: bool = False
    deterministic: bool = False
    device: str = "auto"
    # Gradients are summed over ranks in buckets of this many MiB, each started as soon as backward has filled it
    # (overlapping communication with computation); 0 sums them all in one all-reduce after backward.
    allreduce_bucket_mb: float = 25.0
    # Why `precision` has its value when --precision auto chose it (printed at the start and by --dry-run), else "".
    auto_reason: str = ""


@dataclass(frozen=True)
class AugmentConfig:
    """Adaptive discriminator augmentation (Karras et al. 2020, Sec. 3): `ada` adjusts p toward `target`."""

    mode: str = "ada"
    target: float = 0.6
    ada_kimg: float = 500.0  # p can go from 0 to 1 in this many kimg (the paper's adjustment speed, Sec. 2.4)


@dataclass(frozen=True)
class RunConfig:
    """Output, resume and retention; none of it changes the training maths."""

    outdir: str
    resume: str = "auto"
    keep_last: int = 3
    keep_every: float | None = None
    keep_max_age: float | None = None
    allow_config_change: bool = False
    metrics: tuple[str, ...] = ()


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
    "precision.allreduce_bucket_mb", "precision.auto_reason",
})  # fmt: skip


def flatten(d: dict, prefix: str = "") -> dict:
    """{"a": {"b": 1}} -> {"a.b": 1}."""
    out = {}
    for key, value in d.items():
        if isinstance(value, dict):
            out.update(flatten(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
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
    a = {k: v for k, v in field_defaults().items() if k in b} | a
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
        f"networks: channel base {cfg.model.channel_base}, max {cfg.model.channel_max}, mapping "
        f"{cfg.model.mapping_layers} layers, minibatch-stddev group {cfg.model.mbstd_group}",
        f"{s.kimg:g} kimg in ticks of {s.tick_kimg:g} kimg; snapshot + checkpoint every {s.snap} ticks",
        *(
            [f"precision {cfg.precision.precision} (auto: {cfg.precision.auto_reason})"]
            if cfg.precision.auto_reason
            else []
        ),
    ]
