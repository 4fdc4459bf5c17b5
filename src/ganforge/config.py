"""Training configuration: a tree of frozen dataclasses, a preset table, derived values and validation (STYLE 6-8).

`resolve(options, dataset, world_size, device_type)` turns CLI-style options (None = "take it from the preset") into
one `Config`, listing every problem at once in a `UserError`. `Config.to_json()` / `Config.from_json()` round-trip it.
This module imports neither torch nor click so that it stays cheap to import.
"""

import dataclasses
import hashlib
import json
from dataclasses import dataclass

from ganforge.errors import UserError
from ganforge.limits import RESOLUTIONS, resolution_ok

PRECISIONS = ("fp32", "tf32", "bf16", "fp16")
AUGMENTS = ("ada", "noaug")


@dataclass(frozen=True)
class Preset:
    """One row of the preset table; None means "derive it" (see `_derive`)."""

    batch: int | None
    mbstd: int | None
    channel_base: int | None
    lr: float | None
    gamma: float | None
    ema_kimg: float | None
    ema_rampup: float | None
    mapping_layers: int
    kimg: float
    resolution: int | None = None
    channel_max: int = 512
    z_dim: int = 512
    pl_weight: float = 2.0
    style_mixing: float = 0.9
    tick_kimg: float = 4.0
    snap: int = 50


# The official configurations (Karras et al. 2020, "Training GANs with limited data", Table/App. D and its released
# `cfg_specs`): batch, minibatch-stddev group, channel base (fmaps x 32768), learning rate, R1 gamma, EMA half-life in
# kimg, EMA ramp-up, mapping depth. `auto` derives them from the resolution; `tiny` is a small, fast CPU setting.
PRESETS = {  # fmt: skip
    "auto": Preset(None, None, None, None, None, None, 0.05, 2, kimg=25000),
    "stylegan2": Preset(32, 4, 32768, 0.002, 10.0, 10.0, None, 8, kimg=25000),
    "paper256": Preset(64, 8, 16384, 0.0025, 1.0, 20.0, None, 8, kimg=25000, resolution=256),
    "paper512": Preset(64, 8, 32768, 0.0025, 0.5, 20.0, None, 8, kimg=25000, resolution=512),
    "paper1024": Preset(32, 4, 32768, 0.002, 2.0, 10.0, None, 8, kimg=25000, resolution=1024),
    "cifar": Preset(
        64, 32, 32768, 0.0025, 0.01, 500.0, 0.05, 2, kimg=100000, resolution=32, pl_weight=0.0, style_mixing=0.0
    ),
    "tiny": Preset(16, 4, 512, 0.0025, 0.05, 1.0, 0.05, 2, kimg=40, channel_max=64, z_dim=64, tick_kimg=0.8, snap=5),
}


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

    precision: str = "fp32"
    compile: bool = False
    channels_last: bool = False
    deterministic: bool = False
    device: str = "auto"
    # Gradients are summed over ranks in buckets of this many MiB, each started as soon as backward has filled it
    # (overlapping communication with computation); 0 sums them all in one all-reduce after backward.
    allreduce_bucket_mb: float = 25.0
    # Why `precision` has its value when it was chosen by "auto" (printed at the start and by --dry-run), else "".
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

    cfg: str
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
        kinds = {f.name: f.type for f in dataclasses.fields(cls)}
        assert set(d) == set(kinds), f"config keys {sorted(d)} != {sorted(kinds)}"
        kwargs = {name: kinds[name](**value) if isinstance(value, dict) else value for name, value in d.items()}
        kwargs["run"] = dataclasses.replace(kwargs["run"], metrics=tuple(kwargs["run"].metrics))
        return cls(**kwargs)

    @classmethod
    def from_json(cls, text: str) -> "Config":
        return cls.from_dict(json.loads(text))


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
    flat = flatten(config_dict)
    return {k: v for k, v in flat.items() if not k.startswith("run.") and k not in NON_MATHS_FIELDS}


def config_hash(config: Config) -> str:
    """SHA-256 of the training-maths fields, stored in every checkpoint."""
    text = json.dumps(maths_fields(config.to_dict()), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def maths_differences(old: dict, new: dict) -> list[str]:
    """Human-readable `field: old -> new` lines for the maths fields that differ."""
    a, b = maths_fields(old), maths_fields(new)
    return [f"{k}: {a.get(k)!r} -> {b.get(k)!r}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def _derive(preset: Preset, resolution: int, world_size: int) -> Preset:
    """ADA's `auto` heuristic (Karras et al. 2020, App. D): batch, group, width, lr, gamma and EMA from resolution."""
    if preset.batch is not None:
        return preset
    batch = max(min(world_size * min(4096 // resolution, 32), 64), world_size)
    return dataclasses.replace(
        preset,
        batch=batch,
        mbstd=min(batch // world_size, 4),
        channel_base=32768 if resolution >= 512 else 16384,
        lr=0.002 if resolution >= 1024 else 0.0025,
        gamma=0.0002 * resolution**2 / batch,  # R1 weight grows with the pixel count (ADA App. D).
        ema_kimg=batch * 10 / 32,  # EMA half-life of 10 kimg at batch 32, proportional to batch.
    )


def _pick(options: dict, key: str, default):
    value = options.get(key)
    return default if value is None else value


def _whole_batches(kimg: float, batch: int) -> float:
    """A preset length rounded to the nearest whole number of batches (at least one); explicit flags must be exact."""
    return max(round(kimg * 1000 / batch), 1) * batch / 1000


def _subset(given: dict, *keys: str) -> dict:
    return {k: given[k] for k in keys if k in given}


def _is_whole_batches(kimg: float, batch: int) -> bool:
    nimg = kimg * 1000
    return abs(nimg - round(nimg)) < 1e-6 and round(nimg) % batch == 0


def _dataset_problems(preset: Preset, cfg: Config, dataset) -> list[str]:
    """What does not fit the dataset, one message each."""
    problems = []
    res = dataset.resolution
    if not resolution_ok(res):
        problems.append(f"--data: resolution {res} is not {RESOLUTIONS}; rebuild it with `ganforge dataset build "
                        f"--resolution R`")  # fmt: skip
    if preset.resolution is not None and preset.resolution != res:
        problems.append(
            f"--cfg {cfg.cfg}: made for {preset.resolution}x{preset.resolution}, but --data is "
            f"{res}x{res}; pick --cfg auto or stylegan2, or rebuild the dataset at {preset.resolution}"
        )
    if cfg.data.cond and dataset.label_dim == 0:
        problems.append("--cond: the dataset has no labels; build it with labels or drop --cond")
    return problems


def _problems(cfg: Config, device_type: str) -> list[str]:
    """Every invalid combination of options, one message each."""
    s, p = cfg.schedule, cfg.precision
    problems = []
    if s.batch % (s.batch_gpu * cfg.world_size):
        problems.append(
            f"--batch {s.batch}: not divisible by --batch-gpu {s.batch_gpu} x {cfg.world_size} "
            f"process(es); choose a batch that is a multiple of {s.batch_gpu * cfg.world_size}"
        )
    if s.batch_gpu % cfg.model.mbstd_group:
        problems.append(
            f"--batch-gpu {s.batch_gpu}: not a multiple of the minibatch-stddev group "
            f"{cfg.model.mbstd_group}; use a multiple of it"
        )
    if cfg.loss.pl_weight > 0 and s.batch_gpu % cfg.loss.pl_batch_shrink:
        problems.append(f"--batch-gpu {s.batch_gpu}: must be even (path-length batches are half a micro-batch)")
    for flag, kimg in (("--kimg", s.kimg), ("--tick", s.tick_kimg)):
        if not _is_whole_batches(kimg, s.batch):
            problems.append(
                f"{flag} {kimg:g}: {kimg * 1000:g} images is not a whole number of batches of "
                f"{s.batch}; use a multiple of {s.batch / 1000:g} kimg"
            )
    if p.precision == "fp16" and device_type != "cuda":
        problems.append("--precision fp16: needs a CUDA GPU (no fast fp16 on CPU); use bf16 or fp32 on CPU")
    if p.precision == "tf32" and device_type != "cuda":
        problems.append("--precision tf32: TF32 exists only on NVIDIA GPUs; use fp32 or bf16 on CPU")
    if cfg.model.num_fp16_res and p.precision != "fp16":
        problems.append("--fp16-res: the per-resolution fp16 recipe needs --precision fp16")
    if p.compile and p.precision == "fp16" and cfg.model.num_fp16_res:
        problems.append("--compile: not supported together with --fp16-res; drop one of them")
    return problems


@dataclass(frozen=True)
class _UnknownDataset:
    """Stand-in facts when --data could not be opened, so the other options are still checked."""

    resolution: int = 32
    channels: int = 3
    label_dim: int = 0
    name: str = "dataset"


def resolve(options: dict, dataset, world_size: int, device_type: str, problems: list[str] = ()) -> Config:
    """CLI-style options (None = preset value) + dataset facts -> validated `Config`, or UserError listing all problems.

    `dataset` needs `.resolution`, `.channels`, `.label_dim`, `.name` (None when it could not be opened; its problem
    is then in `problems`); `device_type` is "cpu" or "cuda".
    """
    name = _pick(options, "cfg", "auto")
    if dataset is None:
        dataset = _UnknownDataset(resolution=PRESETS[name].resolution or 32)
    preset = _derive(PRESETS[name], dataset.resolution, world_size)
    batch = _pick(options, "batch", preset.batch)
    batch_gpu = _pick(options, "batch_gpu", max(batch // world_size, 1))
    fp16_res = _pick(options, "fp16_res", 0)
    given = {k: v for k, v in options.items() if v is not None}  # None = "not given": the dataclass default applies
    if given.get("precision") == "auto":
        from ganforge.autoprecision import detect

        given["precision"], given["auto_reason"] = detect(device_type)
    flag = lambda key: bool(options.get(key))  # noqa: E731
    cfg = Config(
        cfg=name,
        world_size=world_size,
        data=DataConfig(path=str(options["data"]), name=dataset.name, resolution=dataset.resolution,
                        channels=dataset.channels, label_dim=dataset.label_dim if flag("cond") else 0,
                        cond=flag("cond"), mirror=flag("mirror"), **_subset(given, "workers")),
        model=ModelConfig(z_dim=preset.z_dim, w_dim=preset.z_dim, mapping_layers=preset.mapping_layers,
                          channel_base=preset.channel_base, channel_max=preset.channel_max,
                          mbstd_group=min(preset.mbstd, batch_gpu), num_fp16_res=fp16_res,
                          conv_clamp=256 if fp16_res else None),
        loss=LossConfig(gamma=_pick(options, "gamma", preset.gamma), pl_weight=preset.pl_weight,
                        style_mixing=preset.style_mixing),
        optim=OptimConfig(g_lr=_pick(options, "glr", preset.lr), d_lr=_pick(options, "dlr", preset.lr)),
        schedule=ScheduleConfig(batch=batch, batch_gpu=batch_gpu,
                                kimg=_pick(options, "kimg", _whole_batches(preset.kimg, batch)),
                                tick_kimg=_pick(options, "tick", _whole_batches(preset.tick_kimg, batch)),
                                snap=_pick(options, "snap", preset.snap), ema_kimg=preset.ema_kimg,
                                ema_rampup=preset.ema_rampup, **_subset(given, "seed")),
        precision=PrecisionConfig(compile=flag("compile"), channels_last=flag("channels_last"),
                                  deterministic=flag("deterministic"),
                                  **_subset(given, "precision", "device", "auto_reason")),
        augment=AugmentConfig(**_subset(given, "target", "ada_kimg"),
                              **({"mode": given["aug"]} if "aug" in given else {})),
        run=RunConfig(outdir=str(options["outdir"]), allow_config_change=flag("allow_config_change"),
                      metrics=tuple(m for m in (options.get("metrics") or "").split(",") if m),
                      **_subset(given, "resume", "keep_last", "keep_every", "keep_max_age")),
    )  # fmt: skip
    problems = list(problems)
    if not isinstance(dataset, _UnknownDataset):
        problems += _dataset_problems(preset, cfg, dataset)
    problems += _problems(cfg, device_type)
    if problems:
        raise UserError(*problems)
    return cfg


def lazy_ratio(interval: int) -> float:
    """Lazy regularisation runs every `interval` steps, so the optimiser sees interval+1 updates where it would see
    interval; lr and betas are corrected by this ratio (StyleGAN2 App. C)."""
    return interval / (interval + 1)


def describe_derived(cfg: Config) -> list[str]:
    """The values the preset and the flags implied, one line each, for the start-of-run printout (STYLE 7)."""
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
