"""The one place where `ganforge train`'s options become facts: `resolve(options) -> Config`.

Every option's value is checked against its declaration first (`ganforge.option`), so no NaN or out-of-range number
reaches a derivation. A given option's value goes to the field it is declared on; what the user did not give comes
from the preset table (`--cfg`), the default of the `Config` field, or is derived from the dataset and the number of
processes (`derive`). The checks of combinations are here too, and all problems are listed at once in one UserError.
"""

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path

import torch

from ganforge import dist
from ganforge.checkpoint import Retention
from ganforge.checkpoint.sizes import first_save_bytes
from ganforge.config import DIFFAUG_OPS, Config, ModelConfig, from_flat
from ganforge.data import open_dataset
from ganforge.errors import UserError
from ganforge.limits import RESOLUTIONS, resolution_ok
from ganforge.metrics import check_names, parse_names
from ganforge.nets.configured import make_networks
from ganforge.option import value_problems
from ganforge.outputs import check_writable_folder, free_bytes
from ganforge.presets import DEFAULT_PRESET, PRESETS, Preset, auto_batch
from ganforge.train.options import TRAIN_OPTIONS, TrainOptions
from ganforge.train.precision import resolve_auto
from ganforge.train.resume import Source, find_source
from ganforge.train.rundir import RunKey


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
    processes train together, the device type ("cpu" or "cuda"), problems met while finding these out, the free
    bytes on --outdir's disk (None: not looked at, as for the bench, which writes no run), and what the run starts
    from (a run to continue, a checkpoint, weights, or nothing). Every look at the file system is here."""

    dataset: DatasetFacts | None
    world_size: int
    device_type: str
    problems: tuple[str, ...] = ()
    outdir_free_bytes: int | None = None
    source: Source | None = None  # what the run starts from (train/resume.py); None: not looked for (the bench)


def observe(options: TrainOptions) -> Facts:
    """Join the process group (torchrun's, or a single process), read the dataset's facts, check that --outdir
    can be written to and how much room its disk has, and find what the run starts from (the run this command
    continues, with its config.json, or what --resume names)."""
    device = dist.init(_pick(options.device, _field_default("runtime.device")))
    dataset, problems, free, source = None, [], None, None
    try:
        dataset = open_dataset(data_path(options))
    except UserError as error:
        problems += error.problems
    try:
        check_writable_folder(Path(options.outdir), "--outdir")
        free = free_bytes(Path(options.outdir))
    except UserError as error:
        problems += error.problems
    # Collective (rank 0 looks, every rank gets the answer), so every rank asks, whatever it met above.
    key = RunKey(str(options.outdir), data_path(options), "" if dataset is None else dataset.name,
                 options.preset or DEFAULT_PRESET, _pick(options.resume, _field_default("run.resume")))  # fmt: skip
    try:
        source = find_source(key)
    except UserError as error:
        problems += error.problems
    return Facts(dataset, dist.world_size(), device.type, tuple(problems), free, source)


def data_path(options: TrainOptions) -> str:
    """--data as an absolute path, so that a run is found again from any working directory."""
    return str(Path(options.data).resolve())


def resolve(options: TrainOptions, facts: Facts | None = None) -> Config:
    """Options (None = not given) + facts -> validated Config, or one UserError listing every problem.

    `facts` None: found out here by `observe` (which joins the process group and opens --data)."""
    problems = value_problems(TRAIN_OPTIONS, options)
    facts = observe(options) if facts is None else facts
    # A refused value is left out (as if not given) so that the other checks still run and every problem is listed.
    refused = {d.name for d in TRAIN_OPTIONS if d.problem(getattr(options, d.name)) is not None}
    asked, options = options, dataclasses.replace(options, **dict.fromkeys(refused - {"data", "outdir"}))
    name = options.preset or DEFAULT_PRESET
    dataset = facts.dataset or DatasetFacts(resolution=PRESETS[name].resolution or 32, channels=3, label_dim=0,
                                            name="dataset")  # fmt: skip
    preset = derive(PRESETS[name], dataset.resolution, facts.world_size)
    lr_steps = parse_kimg_list(options.lr_steps)
    cfg = _build(options, name, preset, dataset, facts.world_size, () if isinstance(lr_steps, str) else lr_steps)
    continued = facts.source if facts.source is not None and facts.source.kind == "continue" else None
    cfg = resolve_auto(cfg, facts.device_type, None if continued is None else (continued.path, continued.config))
    problems += [lr_steps] if isinstance(lr_steps, str) else []
    problems += list(facts.problems) + _space_problems(cfg, facts) + _metric_problems(cfg) + _retention_problems(cfg)
    if facts.dataset is not None:
        problems += _dataset_problems(preset, cfg, facts.dataset)
    problems += _batch_problems(options, preset, cfg) + _problems(cfg, facts.device_type) + _control_problems(cfg)
    problems += _augment_problems(cfg, asked.aug_p)
    if problems:
        raise UserError(*problems)
    return cfg


def _build(
    options: TrainOptions, name: str, preset: Preset, dataset, world_size: int, lr_steps: tuple[float, ...]
) -> Config:
    """The Config itself: each given option's value in the field it is declared on, overridden by what is derived
    from the preset, the dataset and the other options; every other field keeps its default."""
    o = options
    batch = _pick(o.batch, preset.batch)
    batch_gpu = _pick(o.batch_gpu, max(batch // world_size, 1))
    fp16_res = _pick(o.fp16_res, _fp16_res_default(preset, o.precision))
    blur = _blur_sigma(preset, o.resume)
    kimg = _pick(o.kimg, _whole_batches(preset.kimg, batch))
    derived = {
        "preset": name, "world_size": world_size, "run.outdir": str(o.outdir),
        "data.path": data_path(o), "data.name": dataset.name, "data.resolution": dataset.resolution,
        "data.channels": dataset.channels, "data.label_dim": dataset.label_dim if o.cond else 0,
        "model.z_dim": preset.z_dim, "model.w_dim": preset.z_dim, "model.mapping_layers": preset.mapping_layers,
        "model.channel_base": preset.channel_base, "model.channel_max": preset.channel_max,
        "model.mbstd_group": min(preset.mbstd, batch_gpu), "model.generator": preset.generator,
        "model.synthesis_layers": preset.synthesis_layers,
        "precision.fp16_res": fp16_res, "precision.conv_clamp": 256 if fp16_res else None,
        "loss.gamma": _pick(o.gamma, preset.gamma), "loss.pl_weight": preset.pl_weight,
        "loss.style_mixing": preset.style_mixing, "loss.blur_sigma": blur,
        "loss.blur_fade_kimg": _blur_fade_kimg(preset, batch) if blur else None,
        "optim.g_lr": _pick(o.glr, preset.lr), "optim.d_lr": _pick(o.dlr, _pick(preset.d_lr, preset.lr)),
        # Cosine decay ends at the run's length, stored so that a resumed run with a longer --kimg stays on the
        # curve it started on (unless --allow-config-change).
        "optim.lr_horizon_kimg": kimg if o.lr_schedule == "cosine" else None,
        "optim.lr_steps": None if o.lr_steps is None else lr_steps,
        "optim.clip_grad_g": _pick(o.clip_grad_g, o.clip_grad), "optim.clip_grad_d": _pick(o.clip_grad_d, o.clip_grad),
        "schedule.batch": batch, "schedule.batch_gpu": batch_gpu, "schedule.kimg": kimg,
        "schedule.tick_kimg": _pick(o.tick, _whole_batches(preset.tick_kimg, batch)),
        "schedule.snap": _pick(o.snap, preset.snap), "schedule.ema_kimg": _ema_kimg(PRESETS[name], preset, batch),
        "schedule.ema_rampup": preset.ema_rampup,
        "run.metrics": None if o.metrics is None else tuple(parse_names(o.metrics)),
    }  # fmt: skip
    return from_flat(_given(o) | {path: value for path, value in derived.items() if value is not None})


def _given(options: TrainOptions) -> dict:
    """The given options' values by the dotted name of the field each is declared on (a negated switch inverted)."""
    values = {}
    for d in TRAIN_OPTIONS:
        value = getattr(options, d.name)
        if d.field is not None and value is not None and value is not False:
            values[d.path] = not value if d.option.negated else value
    return values


def parse_kimg_list(text: str | None) -> tuple[float, ...] | str:
    """--lr-steps '100,250' -> (100.0, 250.0); () when not given; the problem's message when it is not finite
    numbers."""
    try:
        steps = tuple(float(part) for part in (text or "").split(",") if part.strip())
    except ValueError:
        steps = (math.nan,)
    if not all(math.isfinite(k) for k in steps):
        return f"--lr-steps {text:.60}: not a comma-separated list of kimg values; write e.g. --lr-steps 100,250"
    return steps


def _pick(value, default):
    return default if value is None else value


def _field_default(path: str):
    return next(d.default for d in TRAIN_OPTIONS if d.path == path)


def derive(preset: Preset, resolution: int, world_size: int) -> Preset:
    """The row with its None values derived from the resolution by ADA's `auto` heuristic (Karras et al. 2020,
    App. D): batch, group, width, lr, R1 gamma and EMA. Values the row states are kept."""
    batch = preset.batch or auto_batch(resolution, world_size)
    derived = dict(
        batch=batch,
        mbstd=min(batch // world_size, 4),
        channel_base=32768 if resolution >= 512 else 16384,
        lr=0.002 if resolution >= 1024 else 0.0025,
        gamma=r1_gamma(resolution, batch, _is_stylegan3(preset)),
        ema_kimg=batch * 10 / 32,  # EMA half-life of 10 kimg at batch 32, proportional to batch.
    )
    return dataclasses.replace(preset, **{key: value for key, value in derived.items() if getattr(preset, key) is None})


def r1_gamma(resolution: int, batch: int, stylegan3: bool) -> float:
    """A heuristic R1 weight that grows with the pixel count and falls with the batch. ADA's (Karras et al. 2020,
    App. D) is 0.0002 x res^2 / batch. StyleGAN3 (Karras et al. 2021, App. D) chooses gamma per dataset instead;
    5x ADA's, 0.001 x res^2 / batch, gives at batch 32 the values its released setup recommends (2 at 256x256,
    8.2 at 512x512, 32.8 at 1024x1024, the paper's FFHQ value). Either is a starting point: --gamma sets it."""
    per_pixel = 0.001 if stylegan3 else 0.0002
    return per_pixel * resolution**2 / batch


def _is_stylegan3(preset: Preset) -> bool:
    return _pick(preset.generator, ModelConfig.generator).startswith("stylegan3")


def _ema_kimg(row: Preset, preset: Preset, batch: int) -> float:
    """EMA half-life. StyleGAN3's released setup derives it from the batch actually trained with (10 kimg at batch 32,
    --batch included); ADA's `auto` from the batch it derived, whatever --batch says."""
    if row.ema_kimg is None and _is_stylegan3(preset):
        return batch * 10 / 32
    return preset.ema_kimg


def _fp16_res_default(preset: Preset, precision: str | None) -> int:
    """Layers in fp16 without --fp16-res: the row's recipe under --precision fp16 (StyleGAN3: the top 4 octaves, as
    released), else the field's default (fp16 by autocast)."""
    default = _field_default("precision.fp16_res")
    return _pick(preset.fp16_res, default) if precision == "fp16" else default


def _blur_sigma(preset: Preset, resume: str | None) -> float | None:
    """The row's blurred-D warm-up (StyleGAN3-R, App. D), except when fine-tuning from a snapshot: such a network is
    past the warm-up, and the released setup disables the blur when it resumes from a network."""
    fine_tuning = resume is not None and ".safetensors" in resume
    return None if fine_tuning else preset.blur_sigma


def _blur_fade_kimg(preset: Preset, batch: int) -> float:
    return _pick(preset.blur_fade_kimg, 200 * batch / 32)  # the blur fades out over 200 kimg at batch 32 (App. D)


def _whole_batches(kimg: float, batch: int) -> float:
    """A preset length rounded to the nearest whole number of batches (at least one); explicit flags must be exact."""
    return max(round(kimg * 1000 / batch), 1) * batch / 1000


def _is_whole_batches(kimg: float, batch: int) -> bool:
    nimg = kimg * 1000
    return abs(nimg - round(nimg)) < 1e-6 and round(nimg) % batch == 0


def _length_problems(lengths: list[tuple[str, float]], batch: int) -> list[str]:
    """Lengths (flag, kimg) that are not a whole number of global batches, so that a schedule never changes with the
    number of GPUs."""
    return [f"{flag} {kimg:g}: {kimg * 1000:g} images is not a whole number of batches of {batch}; use a multiple "
            f"of {batch / 1000:g} kimg" for flag, kimg in lengths if not _is_whole_batches(kimg, batch)]  # fmt: skip


def _space_problems(cfg: Config, facts: Facts) -> list[str]:
    """--outdir's disk holds the first checkpoint and snapshot (sizes counted only when the free room is known)."""
    if facts.outdir_free_bytes is None:
        return []
    with torch.device("meta"):  # shapes only: nothing allocated, nothing initialised
        need = first_save_bytes(*make_networks(cfg))
    if facts.outdir_free_bytes >= need:
        return []
    return [f"--outdir {cfg.run.outdir}: {facts.outdir_free_bytes / 2**20:,.0f} MiB free on its disk, but the first "
            f"checkpoint and snapshot need about {need / 2**20:,.0f} MiB; free some space or pass a folder on another "
            "disk"]  # fmt: skip


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


def _batch_problems(options: TrainOptions, preset: Preset, cfg: Config) -> list[str]:
    """The batch sizes, each problem told in terms of what the user passed: --batch-gpu when given, else --batch (or
    the preset's batch when neither was), with a value that works."""
    s, world = cfg.schedule, cfg.world_size
    pl_even = cfg.loss.pl_batch_shrink if cfg.loss.pl_weight > 0 else 1  # path-length batches are a part of a batch
    batch = f"--batch {s.batch}" if options.batch is not None else f"--cfg {cfg.preset}'s batch {s.batch}"
    if options.batch_gpu is not None:
        if not _micro_batch_ok(s.batch_gpu, preset.mbstd, pl_even):
            fits = [g for g in range(1, s.batch // world + 1) if s.batch % (g * world) == 0]
            good = _nearest_micro_batch(s.batch_gpu, preset.mbstd, pl_even, among=fits)
            fix = f"--batch-gpu {good}" if good in fits else f"--batch-gpu {good} --batch {good * world}"
            return [f"--batch-gpu {s.batch_gpu}: {_why_not(s.batch_gpu, preset.mbstd, pl_even)}; pass {fix}"]
        if s.batch % (s.batch_gpu * world):
            return [f"{batch}: not a whole number of --batch-gpu {s.batch_gpu} x {world} process(es); pass --batch "
                    f"{max(s.batch // (s.batch_gpu * world), 1) * s.batch_gpu * world}"]  # fmt: skip
        return []
    if s.batch % world or not _micro_batch_ok(s.batch_gpu, preset.mbstd, pl_even):
        good = _nearest_micro_batch(max(s.batch // world, 1), preset.mbstd, pl_even) * world
        why = (f"not divisible by the {world} processes" if s.batch % world else f"each of the {world} process(es) "
               f"would take {s.batch_gpu} images, which {_why_not(s.batch_gpu, preset.mbstd, pl_even)}")  # fmt: skip
        return [f"{batch}: {why}; pass --batch {good}"]
    return []


def _why_not(batch_gpu: int, mbstd: int, pl_even: int) -> str:
    if batch_gpu % pl_even:
        return "must be even (path-length batches are half a micro-batch)"
    return f"must be a multiple of the minibatch-stddev group {min(mbstd, batch_gpu)}"


def _micro_batch_ok(batch_gpu: int, mbstd: int, pl_even: int) -> bool:
    """Does a micro-batch split into minibatch-stddev groups (of min(mbstd, batch_gpu)) and path-length halves?"""
    return batch_gpu % min(mbstd, batch_gpu) == 0 and batch_gpu % pl_even == 0


def _nearest_micro_batch(batch_gpu: int, mbstd: int, pl_even: int, among: list[int] | None = None) -> int:
    """The valid micro-batch nearest `batch_gpu` (below first), taken from `among` when one of those is valid."""
    candidates = sorted(range(1, 4 * batch_gpu + 8), key=lambda g: (abs(g - batch_gpu), g > batch_gpu))
    valid = [g for g in candidates if _micro_batch_ok(g, mbstd, pl_even)]
    return next((g for g in valid if among is None or g in among), valid[0])


def _problems(cfg: Config, device_type: str) -> list[str]:
    """Every invalid combination of options, one message each."""
    s, p, r = cfg.schedule, cfg.precision, cfg.runtime
    problems = []
    problems += _length_problems([("--kimg", s.kimg), ("--tick", s.tick_kimg)], s.batch)
    if cfg.run.profile and s.kimg <= s.tick_kimg:
        problems.append(f"--profile {cfg.run.profile}: the profiler starts after the first tick (--tick "
                        f"{s.tick_kimg:g} kimg of warm-up), but the run ends at --kimg {s.kimg:g}; lower --tick or "
                        "raise --kimg")  # fmt: skip
    if p.mode == "fp16" and device_type != "cuda":
        problems.append("--precision fp16: needs a CUDA GPU (no fast fp16 on CPU); use bf16 or fp32 on CPU")
    if p.mode == "tf32" and device_type != "cuda":
        problems.append("--precision tf32: TF32 exists only on NVIDIA GPUs; use fp32 or bf16 on CPU")
    if p.fp16_res and p.mode != "fp16":
        problems.append("--fp16-res: the per-resolution fp16 recipe needs --precision fp16")
    if r.compile and p.mode == "fp16" and p.fp16_res:
        problems.append("--compile: not supported together with --fp16-res; drop one of them")
    problems += _freeze_problems(cfg)
    if r.grad_checkpoint and cfg.model.generator != "stylegan2":
        problems.append(
            f"--grad-checkpoint: the {cfg.model.generator} generator updates running statistics in its "
            "layers' forward, which recomputation would repeat; use it with a StyleGAN2 --cfg or drop it"
        )
    return problems


def _freeze_problems(cfg: Config) -> list[str]:
    """--freeze-d counts layers of D that exist (its last block is never frozen)."""
    if not cfg.optim.freeze_d:
        return []
    with torch.device("meta"):  # shapes only: nothing allocated
        layers = len(make_networks(cfg)[1].layers_from_input())
    if cfg.optim.freeze_d <= layers:
        return []
    return [f"--freeze-d {cfg.optim.freeze_d}: D at {cfg.data.resolution}x{cfg.data.resolution} has {layers} layers "
            f"before its last block; freeze at most {layers}"]  # fmt: skip


def _control_problems(cfg: Config) -> list[str]:
    """Bad values and combinations of the learning-rate schedule, clipping and two-phase options, one message each."""
    o, s = cfg.optim, cfg.schedule
    out = []
    if o.lr_steps and o.lr_schedule != "step":
        out.append("--lr-steps: only used by --lr-schedule step; add it or drop --lr-steps")
    if o.lr_schedule == "step" and not o.lr_steps:
        out.append("--lr-schedule step: needs --lr-steps KIMG,KIMG (where the rate is multiplied by --lr-gamma)")
    if list(o.lr_steps) != sorted(set(o.lr_steps)) or any(k <= 0 for k in o.lr_steps):
        out.append(f"--lr-steps {','.join(f'{k:g}' for k in o.lr_steps)}: must be positive and increasing kimg")
    if o.lr_horizon_kimg is not None and o.lr_warmup_kimg >= o.lr_horizon_kimg:
        out.append(f"--lr-warmup-kimg {o.lr_warmup_kimg:g}: must be shorter than the cosine decay (--kimg)")
    if s.d_warmup_kimg >= s.kimg:
        out.append(f"--d-warmup-kimg {s.d_warmup_kimg:g}: must be shorter than --kimg {s.kimg:g}, or G never trains")
    lengths = [("--d-warmup-kimg", s.d_warmup_kimg), ("--lr-warmup-kimg", o.lr_warmup_kimg)]
    return out + _length_problems(lengths + [("--lr-steps", k) for k in o.lr_steps if k > 0], s.batch)


def _augment_problems(cfg: Config, asked_p: float | None) -> list[str]:
    """Combinations of the augmentation options that do not work, one message each; `asked_p` is --aug-p as given
    (also when its value was refused: it is still an option that only --aug fixed uses)."""
    a = cfg.augment
    out = []
    if a.mode != "fixed" and (a.p > 0 or isinstance(asked_p, (int, float)) and asked_p > 0):
        out.append("--aug-p: only used by --aug fixed; add --aug fixed or drop --aug-p")
    ops = [op.strip() for op in a.diffaug_policy.split(",") if op.strip()]
    if not ops or any(op not in DIFFAUG_OPS for op in ops):
        out.append(f"--diffaug-policy {a.diffaug_policy}: use a comma-separated subset of {','.join(DIFFAUG_OPS)}")
    return out
