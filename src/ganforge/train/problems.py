"""What `resolve` refuses besides single values (which their declarations check): combinations of options, and
options that do not fit the dataset, the number of processes, the device or --outdir's disk. Each is one message
naming the flag and the fix; they are collected, never raised here."""

import torch

from ganforge.checkpoint import Retention
from ganforge.checkpoint.sizes import first_save_bytes
from ganforge.config import DIFFAUG_OPS, Config
from ganforge.config.architecture import architecture_of
from ganforge.devices import kernels_problem
from ganforge.errors import UserError
from ganforge.families import FAMILIES, Preset, family_of, titles_where
from ganforge.limits import RESOLUTIONS, image_size_ok, stage_resolutions
from ganforge.metrics import check_names
from ganforge.metrics.registry import file_problems
from ganforge.nets.configured import make_networks, network_arguments
from ganforge.track.session import tracker_problems
from ganforge.train.facts import Facts
from ganforge.train.layouts import layout_problems
from ganforge.train.options import TrainOptions


def combination_problems(cfg: Config, options, asked, preset: Preset, facts) -> list[str]:
    """Every problem of the resolved `cfg`: `options` as resolved (refused values left out), `asked` as given,
    `preset` the derived row, `facts` what observe() found."""
    widths = _width_problems(cfg)
    if widths:  # the checks below build the networks on the meta device, which these widths cannot make
        return widths
    problems = _space_problems(cfg, facts) + _metric_problems(cfg) + _retention_problems(cfg)
    problems += tracker_problems(cfg.run.tracker)
    if facts.dataset is not None:
        problems += _dataset_problems(preset, cfg, facts.dataset)
    problems += _batch_problems(options, preset, cfg) + _problems(cfg, facts.device_type)
    problems += _control_problems(cfg, asked.lr_steps) + layout_problems(cfg, options, asked, facts)
    return problems + _augment_problems(cfg, asked.aug_p)


def _width_problems(cfg: Config) -> list[str]:
    """--cbase/--cmax (or a preset's) make networks: a channel at least at the image's resolution, layers within the
    limit the family's files are read with, and grouped stages' groups (R3GAN's) dividing the width of every stage."""
    m, res = cfg.model, cfg.data.resolution
    if m.channel_base < res:
        return [
            f"--cbase {m.channel_base}: leaves no channels at {res}x{res} (a layer at resolution r has min(cbase / r, "
            f"cmax) channels); use at least {res}"
        ]
    family = family_of(m.generator)
    if m.channel_max > family.max_channels:
        return [f"--cmax {m.channel_max}: {family.title}'s layers have at most {family.max_channels} channels"]
    if m.group_channels is None:  # no grouped convolutions
        return []
    g, _ = network_arguments(architecture_of(cfg))
    uneven = [
        f"{width} at {r}x{r}"
        for r, width, groups in zip(stage_resolutions(res), g["widths"], g["cardinalities"], strict=True)
        if width % groups
    ]
    if not uneven:
        return []
    step = m.group_channels * res  # a base that is a multiple of it gives multiples of group_channels everywhere
    return [
        f"--cbase {m.channel_base}, --cmax {m.channel_max}: R3GAN splits each stage into groups of "
        f"{m.group_channels} channels, which do not divide the widths {', '.join(uneven)}; use a --cbase that is a "
        f"multiple of {step} (e.g. {max(round(m.channel_base / step), 1) * step}) and a --cmax that is a multiple of "
        f"{m.group_channels}"
    ]


def _space_problems(cfg: Config, facts: Facts) -> list[str]:
    """--outdir's disk holds the first checkpoint and snapshot (sizes counted only when the free room is known)."""
    if facts.outdir_free_bytes is None:
        return []
    with torch.device("meta"):  # shapes only: nothing allocated, nothing initialised
        need = first_save_bytes(*make_networks(cfg))
    if facts.outdir_free_bytes >= need:
        return []
    return [
        f"--outdir {cfg.run.outdir}: {facts.outdir_free_bytes / 2**20:,.0f} MiB free on its disk, but the first "
        f"checkpoint and snapshot need about {need / 2**20:,.0f} MiB; free some space or pass a folder on another "
        "disk"
    ]


def _metric_problems(cfg: Config) -> list[str]:
    """Unknown names, and the files that named metrics need (--vgg16, --inception-classifier) not given or missing."""
    if not cfg.run.metrics:
        return []
    names = list(cfg.run.metrics)
    try:
        check_names(names)
    except UserError as error:
        return list(error.problems)
    return file_problems(names, vgg16=cfg.run.vgg16, inception_classifier=cfg.run.inception_classifier)


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
    if not image_size_ok(dataset.width, dataset.height):
        problems.append(
            f"--data: {dataset.width}x{dataset.height} images, a side not {RESOLUTIONS}; rebuild it with `ganforge "
            "dataset build --resolution R` (or WxH)"
        )
    rows, cols = dataset.aspect
    size = f"{res * cols}x{res * rows}"
    if preset.resolution is not None and preset.resolution != res:
        problems.append(
            f"--cfg {cfg.preset}: made for {preset.resolution}x{preset.resolution}, but --data is "
            f"{size}; pick --cfg auto or stylegan2, or rebuild the dataset at {preset.resolution}"
        )
    if (rows, cols) != (1, 1):
        problems += _non_square_problems(cfg, size)
    if cfg.data.cond and dataset.label_dim == 0:
        problems.append("--cond: the dataset has no labels; build it with labels or drop --cond")
    return problems


def _non_square_problems(cfg: Config, size: str) -> list[str]:
    """What cannot train on non-square images: only StyleGAN2's networks take an aspect (its constant input and D's
    last block), and a growing network's stages are square."""
    problems = []
    if not family_of(cfg.model.generator).non_square:
        families = [family for family in FAMILIES.values() if family.non_square]
        presets = ", ".join(name for family in families for name in family.presets)
        problems.append(
            f"--cfg {cfg.preset}: --data is {size}, and only {titles_where(lambda f: f.non_square)} (--cfg {presets}) "
            "trains non-square images; pick one of those, or rebuild the dataset square "
            "(`dataset build --resolution R`)"
        )
    if cfg.model.grow:
        problems.append(f"--grow: --data is {size}; progressive growing takes square images only, drop --grow")
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
            return [
                f"{batch}: not a whole number of --batch-gpu {s.batch_gpu} x {world} process(es); pass --batch "
                f"{max(s.batch // (s.batch_gpu * world), 1) * s.batch_gpu * world}"
            ]
        return []
    if s.batch % world or not _micro_batch_ok(s.batch_gpu, preset.mbstd, pl_even):
        good = _nearest_micro_batch(max(s.batch // world, 1), preset.mbstd, pl_even) * world
        why = (
            f"not divisible by the {world} processes"
            if s.batch % world
            else f"each of the {world} process(es) "
            f"would take {s.batch_gpu} images, which {_why_not(s.batch_gpu, preset.mbstd, pl_even)}"
        )
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
    if cfg.run.profile_detail and not cfg.run.profile:
        problems.append("--profile-detail: only with --profile STEPS; add it or drop --profile-detail")
    if cfg.run.profile and s.kimg <= s.tick_kimg:
        problems.append(
            f"--profile {cfg.run.profile}: the profiler starts after the first tick (--tick "
            f"{s.tick_kimg:g} kimg of warm-up), but the run ends at --kimg {s.kimg:g}; lower --tick or "
            "raise --kimg"
        )
    if p.mode == "fp16" and device_type != "cuda":
        problems.append("--precision fp16: needs a CUDA GPU (no fast fp16 on CPU); use bf16 or fp32 on CPU")
    if p.mode == "tf32" and device_type != "cuda":
        problems.append("--precision tf32: TF32 exists only on NVIDIA GPUs; use fp32 or bf16 on CPU")
    family = family_of(cfg.model.generator)
    if p.fp16_res and p.mode != family.reduced_mode:
        problems.append(
            f"--fp16-res: {family.title}'s reduced-precision stages are bfloat16, as released; use it with --precision "
            "bf16"
            if family.reduced_mode == "bf16"
            else "--fp16-res: the per-resolution fp16 recipe needs --precision fp16"
        )
    kernels = kernels_problem(r.kernels, device_type, r.compiling)
    problems += [kernels] if kernels else []
    if r.compiling and p.mode == "fp16" and p.fp16_res:
        problems.append("--compile: not supported together with --fp16-res; drop one of them")
    if r.compile == "reduce-overhead" and device_type != "cuda":
        problems.append(
            f"--compile reduce-overhead: its CUDA graphs exist only on CUDA GPUs; on {device_type} it would compile as "
            "--compile default, so pass that (or max-autotune, which tunes the CPU's kernels)"
        )
    problems += _freeze_problems(cfg)
    if r.grad_checkpoint and not family.recomputes:
        problems.append(
            f"--grad-checkpoint: the {cfg.model.generator} generator updates running statistics in its "
            "layers' forward, which recomputation would repeat; use it with a StyleGAN2 or R3GAN --cfg or drop it"
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
    return [
        f"--freeze-d {cfg.optim.freeze_d}: D at {cfg.data.resolution}x{cfg.data.resolution} has {layers} layers "
        f"before its last block; freeze at most {layers}"
    ]


def _control_problems(cfg: Config, typed_steps: str | None) -> list[str]:
    """Bad values and combinations of the learning-rate schedule, clipping and two-phase options, one message each
    (`typed_steps`: --lr-steps as given, before its kimg were rounded up to whole batches)."""
    o, s = cfg.optim, cfg.schedule
    out = []
    if o.lr_steps and o.lr_schedule != "step":
        out.append("--lr-steps: only used by --lr-schedule step; add it or drop --lr-steps")
    if o.lr_schedule == "step" and not o.lr_steps:
        out.append("--lr-schedule step: needs --lr-steps KIMG,KIMG (where the rate is multiplied by --lr-gamma)")
    if list(o.lr_steps) != sorted(set(o.lr_steps)) or any(k <= 0 for k in o.lr_steps):
        out.append(
            f"--lr-steps {typed_steps:.60}: must be positive and increasing kimg, at least one batch of {s.batch} "
            f"apart (rounded up to whole batches they are {','.join(f'{k:g}' for k in o.lr_steps)})"
        )
    if o.lr_horizon_kimg is not None and o.lr_warmup_kimg >= o.lr_horizon_kimg:
        out.append(f"--lr-warmup-kimg {o.lr_warmup_kimg:g}: must be shorter than the cosine decay (--kimg)")
    if s.d_warmup_kimg >= s.kimg:
        out.append(f"--d-warmup-kimg {s.d_warmup_kimg:g}: must be shorter than --kimg {s.kimg:g}, or G never trains")
    return out


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
