"""The one place where `ganforge train`'s options become facts: `resolve(options) -> Config`.

Every default is applied here, from the one place it lives: the preset table (`--cfg`), the default of the `Config`
field, or a value derived from the dataset and the number of processes (`derive`). Every check is here too, and all
problems are listed at once in one UserError.
"""

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from ganforge import dist
from ganforge.checkpoint import Retention
from ganforge.config import (
    AUTO_PRECISION,
    DEFAULT_PRESET,
    PRESETS,
    AugmentConfig,
    Config,
    DataConfig,
    LossConfig,
    ModelConfig,
    OptimConfig,
    PrecisionConfig,
    Preset,
    RunConfig,
    ScheduleConfig,
    field_default,
)
from ganforge.data import open_dataset
from ganforge.errors import UserError
from ganforge.limits import RESOLUTIONS, resolution_ok
from ganforge.metrics import check_names, parse_names
from ganforge.outputs import check_writable_folder
from ganforge.train import rundir
from ganforge.train.options import TrainOptions
from ganforge.train.precision import choose_auto


@dataclass(frozen=True)
class DatasetFacts:
    """What the configuration needs to know of a dataset (an opened ImageDataset has these attributes too)."""

    resolution: int
    channels: int
    label_dim: int
    name: str


@dataclass(frozen=True)
class Facts:
    """What resolve needs besides the options: the dataset's facts (None when --data could not be opened), how many
    processes train together, the device type ("cpu" or "cuda"), and problems met while finding these out."""

    dataset: DatasetFacts | None
    world_size: int
    device_type: str
    problems: tuple[str, ...] = ()


def observe(options: TrainOptions) -> Facts:
    """Join the process group (torchrun's, or a single process) and read the dataset's facts."""
    device = dist.init(_pick(options.device, field_default(PrecisionConfig, "device")))
    dataset, problems = None, ()
    try:
        dataset = open_dataset(data_path(options))
    except UserError as error:
        problems = tuple(error.problems)
    return Facts(dataset, dist.world_size(), device.type, problems)


def data_path(options: TrainOptions) -> str:
    """--data as an absolute path, so that a run is found again from any working directory."""
    return str(Path(options.data).resolve())


def resolve(options: TrainOptions, facts: Facts | None = None) -> Config:
    """Options (None = not given) + facts -> validated Config, or one UserError listing every problem.

    `facts` None: found out here by `observe` (which joins the process group and opens --data)."""
    facts = observe(options) if facts is None else facts
    name = options.preset or DEFAULT_PRESET
    dataset = facts.dataset or DatasetFacts(resolution=PRESETS[name].resolution or 32, channels=3, label_dim=0,
                                            name="dataset")  # fmt: skip
    preset = derive(PRESETS[name], dataset.resolution, facts.world_size)
    cfg = _auto_precision(_build(options, name, preset, dataset, facts.world_size), facts.device_type)
    problems = list(facts.problems) + _output_problems(cfg) + _metric_problems(cfg) + _retention_problems(cfg)
    if facts.dataset is not None:
        problems += _dataset_problems(preset, cfg, facts.dataset)
    problems += _problems(cfg, facts.device_type)
    if problems:
        raise UserError(*problems)
    return cfg


def _build(options: TrainOptions, name: str, preset: Preset, dataset, world_size: int) -> Config:
    """The Config itself: the option where given, else the preset's value, else the field's default."""
    o = options
    batch = _pick(o.batch, preset.batch)
    batch_gpu = _pick(o.batch_gpu, max(batch // world_size, 1))
    fp16_res = _pick(o.fp16_res, field_default(ModelConfig, "num_fp16_res"))
    return Config(
        preset=name,
        world_size=world_size,
        data=DataConfig(path=data_path(o), name=dataset.name, resolution=dataset.resolution, channels=dataset.channels,
                        label_dim=dataset.label_dim if o.cond else 0, cond=o.cond, mirror=o.mirror,
                        **_given(workers=o.workers)),
        model=ModelConfig(z_dim=preset.z_dim, w_dim=preset.z_dim, mapping_layers=preset.mapping_layers,
                          channel_base=preset.channel_base, channel_max=preset.channel_max,
                          mbstd_group=min(preset.mbstd, batch_gpu), num_fp16_res=fp16_res,
                          conv_clamp=256 if fp16_res else None),
        loss=LossConfig(gamma=_pick(o.gamma, preset.gamma),
                        **_given(pl_weight=preset.pl_weight, style_mixing=preset.style_mixing)),
        optim=OptimConfig(g_lr=_pick(o.glr, preset.lr), d_lr=_pick(o.dlr, preset.lr)),
        schedule=ScheduleConfig(batch=batch, batch_gpu=batch_gpu,
                                kimg=_pick(o.kimg, _whole_batches(preset.kimg, batch)),
                                tick_kimg=_pick(o.tick, _whole_batches(preset.tick_kimg, batch)),
                                snap=_pick(o.snap, preset.snap), ema_kimg=preset.ema_kimg,
                                ema_rampup=preset.ema_rampup, **_given(seed=o.seed)),
        precision=PrecisionConfig(compile=o.compile, channels_last=o.channels_last, deterministic=o.deterministic,
                                  **_given(precision=o.precision, device=o.device,
                                           allreduce_bucket_mb=o.allreduce_bucket_mb)),
        augment=AugmentConfig(**_given(mode=o.aug, target=o.target, ada_kimg=o.ada_kimg)),
        run=RunConfig(outdir=str(o.outdir), allow_config_change=o.allow_config_change,
                      **_given(metrics=None if o.metrics is None else tuple(parse_names(o.metrics)), resume=o.resume,
                               keep_last=o.keep_last, keep_every=o.keep_every, keep_max_age=o.keep_max_age)),
    )  # fmt: skip


def _auto_precision(cfg: Config, device_type: str) -> Config:
    """--precision auto made concrete: the mode of the run this command continues (a rerun on other hardware
    continues the same maths), else the hardware's choice. Rank 0 decides for every rank."""
    if cfg.precision.precision != AUTO_PRECISION:
        return cfg
    mode, why = dist.broadcast_object(_auto_choice(cfg, device_type) if dist.is_main() else None)
    return dataclasses.replace(cfg, precision=dataclasses.replace(cfg.precision, precision=mode, auto_reason=why))


def _auto_choice(cfg: Config, device_type: str) -> tuple[str, str]:
    continued = rundir.continued_config(cfg)
    if continued is not None and continued[1] is not None:
        run, old = continued
        return old["precision"]["precision"], f"kept from {run.name}, the run this command continues"
    return choose_auto(device_type)


def _pick(value, default):
    return default if value is None else value


def _given(**values) -> dict:
    """The values that were given; the others are left out so that the dataclass field's default applies."""
    return {key: value for key, value in values.items() if value is not None}


def derive(preset: Preset, resolution: int, world_size: int) -> Preset:
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


def _whole_batches(kimg: float, batch: int) -> float:
    """A preset length rounded to the nearest whole number of batches (at least one); explicit flags must be exact."""
    return max(round(kimg * 1000 / batch), 1) * batch / 1000


def _is_whole_batches(kimg: float, batch: int) -> bool:
    nimg = kimg * 1000
    return abs(nimg - round(nimg)) < 1e-6 and round(nimg) % batch == 0


def _output_problems(cfg: Config) -> list[str]:
    try:
        check_writable_folder(Path(cfg.run.outdir), "--outdir")
    except UserError as error:
        return list(error.problems)
    return []


def _metric_problems(cfg: Config) -> list[str]:
    if not cfg.run.metrics:
        return []
    try:
        check_names(list(cfg.run.metrics))
    except UserError as error:
        return list(error.problems)
    return []


def _retention_problems(cfg: Config) -> list[str]:
    try:
        Retention(cfg.run.keep_last, cfg.run.keep_every, cfg.run.keep_max_age)
    except UserError as error:
        return list(error.problems)
    return []


def _dataset_problems(preset: Preset, cfg: Config, dataset) -> list[str]:
    """What does not fit the dataset, one message each."""
    problems = []
    res = dataset.resolution
    if not resolution_ok(res):
        problems.append(f"--data: resolution {res} is not {RESOLUTIONS}; rebuild it with `ganforge dataset build "
                        f"--resolution R`")  # fmt: skip
    if preset.resolution is not None and preset.resolution != res:
        problems.append(
            f"--cfg {cfg.preset}: made for {preset.resolution}x{preset.resolution}, but --data is "
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
