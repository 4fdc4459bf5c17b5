"""The one place where `ganforge train`'s options become facts: `resolve(options) -> Config`.

Every option's value is checked against its declaration first (`ganforge.option`), so no NaN or out-of-range number
reaches a derivation. A given option's value goes to the field it is declared on; what the user did not give comes
from the preset table (`--cfg`), the default of the `Config` field, or is derived from the dataset and the number of
processes (`derive`). The checks of combinations are here too, and all problems are listed at once in one UserError.
"""

import dataclasses
import math
from pathlib import Path

from ganforge import dist, memory
from ganforge.config import Config, from_flat
from ganforge.data import open_dataset
from ganforge.data.remote import is_url
from ganforge.errors import UserError
from ganforge.families import Family, Preset, family_of, family_of_preset
from ganforge.interop.pretrained import PretrainedFacts
from ganforge.metrics import parse_names
from ganforge.option import value_problems
from ganforge.outputs import check_writable_folder, free_bytes
from ganforge.presets import DEFAULT_PRESET, PRESETS, auto_batch
from ganforge.train.facts import DatasetFacts, Facts
from ganforge.train.layouts import parse_resolution_list
from ganforge.train.options import TRAIN_OPTIONS, TrainOptions
from ganforge.train.precision import resolve_auto
from ganforge.train.pretrained import pretrained_fields, pretrained_problems
from ganforge.train.problems import combination_problems
from ganforge.train.resume import Source, choose_source, find_sources
from ganforge.train.rundir import RunKey, absolute, absolute_resume


def observe(options: TrainOptions) -> Facts:
    """Join the process group (torchrun's, or a single process), read the dataset's facts, check that --outdir
    can be written to and how much room its disk has, find what the run may start from (what --resume names, and the
    runs of OUTDIR this command may continue, with their config.json), and how much memory the host and the device
    have available."""
    device = dist.init(_pick(options.device, _field_default("runtime.device")))
    dataset, problems, free, found = None, [], None, None
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
    key = RunKey(
        absolute(options.outdir),
        data_path(options),
        "" if dataset is None else dataset.name,
        options.preset or DEFAULT_PRESET,
        absolute_resume(_pick(options.resume, _field_default("run.resume"))),
    )
    try:
        found = find_sources(key)
    except UserError as error:
        problems += error.problems
    host, on_device = memory.available_host_bytes(), memory.available_device_bytes(device)
    return Facts(dataset, dist.world_size(), device.type, tuple(problems), free, found, host, on_device)


def data_path(options: TrainOptions) -> str:
    """--data as an absolute path, so that a run is found again from any working directory; a URL as it is."""
    return options.data if is_url(options.data) else absolute(options.data)


def resolve(options: TrainOptions, facts: Facts | None = None) -> Config:
    """Options (None = not given) + facts -> validated Config, or one UserError listing every problem.

    `facts` None: found out here by `observe` (which joins the process group and opens --data)."""
    return resolve_run(options, facts)[0]


def resolve_run(options: TrainOptions, facts: Facts | None = None) -> tuple[Config, Source | None]:
    """As `resolve`, and what the run starts from (`resume.choose_source`; None when the facts did not look)."""
    problems = value_problems(TRAIN_OPTIONS, options)
    facts = observe(options) if facts is None else facts
    # A refused value is left out (as if not given) so that the other checks still run and every problem is listed.
    refused = {d.name for d in TRAIN_OPTIONS if d.problem(getattr(options, d.name)) is not None}
    asked, options = options, dataclasses.replace(options, **dict.fromkeys(refused - {"data", "outdir"}))
    name = options.preset or DEFAULT_PRESET
    dataset = facts.dataset or DatasetFacts(
        resolution=PRESETS[name].resolution or 32, channels=3, label_dim=0, name="dataset"
    )
    preset = derive(PRESETS[name], dataset.resolution, facts.world_size)
    lr_steps = parse_kimg_list(options.lr_steps)
    named = None if facts.found is None else facts.found.named
    pretrained = named.pretrained if named is not None and named.kind == "weights" else None
    steps = () if isinstance(lr_steps, str) else lr_steps
    attention = {"--g-attn": parse_resolution_list("--g-attn", options.g_attn),
                 "--d-attn": parse_resolution_list("--d-attn", options.d_attn)}  # fmt: skip
    problems += [value for value in attention.values() if isinstance(value, str)]
    attention = {flag: () if isinstance(value, str) else value for flag, value in attention.items()}
    cfg = _build(options, name, preset, dataset, facts.world_size, steps, pretrained, attention)
    source = None
    try:
        source = None if facts.found is None else choose_source(cfg, facts.found)
    except UserError as error:
        problems += error.problems
    continued = (source.path, source.config) if source is not None and source.kind == "continue" else None
    cfg = _reduced_stages_when_auto(resolve_auto(cfg, facts.device_type, continued), options, preset, pretrained)
    problems += [lr_steps] if isinstance(lr_steps, str) else []
    problems += list(facts.problems) + combination_problems(cfg, options, asked, preset, facts)
    problems += [] if pretrained is None else pretrained_problems(cfg, asked, pretrained, named.path)
    if problems:
        raise UserError(*problems)
    return cfg, source


def _build(
    options: TrainOptions,
    name: str,
    preset: Preset,
    dataset,
    world_size: int,
    lr_steps: tuple[float, ...],
    pretrained: PretrainedFacts | None,
    attention: dict[str, tuple[int, ...]],
) -> Config:
    """The Config itself, in layers, each over the one before: the Config fields' defaults; the preset row's values
    (`Preset.overlay`); what is derived from the row, the dataset and the options; the given options, in the fields
    they are declared on; the given lengths, paths and lists as the run records them (rounded to whole batches,
    absolute, parsed); the architecture of the pretrained files the run starts from."""
    o, row, given = options, preset.overlay(), _given(options)
    chosen = row | given  # what a derivation reads: the row's value unless one was given
    batch = chosen["schedule.batch"]
    typed, rounded = typed_lengths(o, batch, lr_steps)
    chosen["schedule.kimg"] = typed.get("schedule.kimg", _whole_batches(preset.kimg, batch))
    derived = (
        _data_fields(o, dataset)
        | _network_fields(preset, chosen, world_size)
        | _optimiser_fields(o, preset, chosen)
        | _loss_fields(preset, chosen, pretrained)
        | _augment_fields(preset, chosen, pretrained)
        | _schedule_fields(name, preset, chosen, pretrained)
        | _precision_fields(o, preset, chosen, pretrained)
    )
    recorded = typed | _attention(preset, attention) | {
        "preset": name, "world_size": world_size, "schedule.rounded": rounded, "schedule.kimg": chosen["schedule.kimg"],
        "run.outdir": absolute(o.outdir), "data.path": data_path(o),
        "run.metrics": None if o.metrics is None else tuple(parse_names(o.metrics)),
        "run.tracker": None if o.tracker is None else tuple(parse_names(o.tracker)),  # comma-separated as --metrics
        "run.resume": absolute_resume(_pick(o.resume, _field_default("run.resume"))),
        "run.vgg16": None if o.vgg16 is None else absolute(o.vgg16),
        "run.inception_classifier": None if o.inception_classifier is None else absolute(o.inception_classifier),
    }  # fmt: skip
    layers = (row, derived, given, recorded, pretrained_fields(pretrained) if pretrained else {})
    return from_flat({path: value for layer in layers for path, value in layer.items() if value is not None})


def _data_fields(options: TrainOptions, dataset) -> dict:
    """What the run's data is: its name, shape, labels (with --cond) and size."""
    return {
        "data.name": dataset.name, "data.resolution": dataset.resolution, "data.aspect": tuple(dataset.aspect),
        "data.channels": dataset.channels, "data.label_dim": dataset.label_dim if options.cond else 0,
        "data.images": dataset.num_raw,
    }  # fmt: skip


def _network_fields(preset: Preset, chosen: dict, world_size: int) -> dict:
    """The per-GPU batch (the batch shared by the processes) and what depends on it, and the layouts."""
    batch_gpu = chosen.get("schedule.batch_gpu", max(chosen["schedule.batch"] // world_size, 1))
    return {
        "schedule.batch_gpu": batch_gpu, "model.mbstd_group": min(preset.mbstd, batch_gpu), **_layouts(preset),
    }  # fmt: skip


def _optimiser_fields(options: TrainOptions, preset: Preset, chosen: dict) -> dict:
    """D's learning rate (the row's, else G's), the schedule of both and where a cosine decay ends, and the gradient
    clips (--clip-grad sets both)."""
    lr_schedule = chosen.get("optim.lr_schedule", "cosine" if preset.anneal_kimg else None)
    return {
        "optim.d_lr": _pick(preset.d_lr, preset.lr), "optim.lr_schedule": lr_schedule,
        # Cosine decay ends at the run's length, stored so that a resumed run with a longer --kimg stays on the
        # curve it started on (unless --allow-config-change).
        "optim.lr_horizon_kimg": _lr_horizon(lr_schedule, chosen["schedule.kimg"], preset),
        "optim.clip_grad_g": options.clip_grad, "optim.clip_grad_d": options.clip_grad,
    }  # fmt: skip


def _loss_fields(preset: Preset, chosen: dict, pretrained: PretrainedFacts | None) -> dict:
    """R3GAN's final gamma (moved with --gamma) and the blurred-D warm-up."""
    blur = _blur_sigma(preset, pretrained)
    return {
        "loss.gamma_final": _gamma_final(chosen.get("loss.gamma"), preset), "loss.blur_sigma": blur,
        "loss.blur_fade_kimg": _blur_fade_kimg(preset, chosen["schedule.batch"]) if blur else None,
    }  # fmt: skip


def _augment_fields(preset: Preset, chosen: dict, pretrained: PretrainedFacts | None) -> dict:
    """The row's fixed p where the augmentation is fixed, and ADA's faster speed when fine-tuning."""
    return {
        "augment.p": preset.aug_p if chosen.get("augment.mode") == "fixed" else None,
        "augment.ada_kimg": FINE_TUNING_ADA_KIMG if pretrained is not None else None,
    }


def _schedule_fields(name: str, preset: Preset, chosen: dict, pretrained: PretrainedFacts | None) -> dict:
    """The tick's length in whole batches, and G_ema's half-life and ramp-up."""
    batch = chosen["schedule.batch"]
    return {
        "schedule.tick_kimg": _whole_batches(preset.tick_kimg, batch),
        "schedule.ema_kimg": _ema_kimg(PRESETS[name], preset, batch),
        "schedule.ema_rampup": _ema_rampup(preset, pretrained),
    }


def _precision_fields(options: TrainOptions, preset: Preset, chosen: dict, pretrained: PretrainedFacts | None) -> dict:
    """The layers in reduced precision, and the clamp where they run in fp16."""
    fp16_res = chosen.get("precision.fp16_res", _fp16_res_default(preset, options.precision, pretrained))
    return {
        "precision.fp16_res": fp16_res,
        "precision.conv_clamp": _conv_clamp(family_of_preset(preset), fp16_res, pretrained),
    }


def _given(options: TrainOptions) -> dict:
    """The given options' values by the dotted name of the field each is declared on (a negated switch inverted)."""
    values = {}
    for d in TRAIN_OPTIONS:
        value = getattr(options, d.name)
        if d.field is not None and value is not None and value is not False:
            values[d.path] = not value if d.option.negated else d.value_of(value)
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
        gamma=r1_gamma(resolution, batch, family_of_preset(preset).gamma_per_pixel),
        ema_kimg=batch * 10 / 32,  # EMA half-life of 10 kimg at batch 32, proportional to batch.
    )
    return dataclasses.replace(preset, **{key: value for key, value in derived.items() if getattr(preset, key) is None})


def r1_gamma(resolution: int, batch: int, per_pixel: float) -> float:
    """A heuristic R1 weight that grows with the pixel count and falls with the batch: `per_pixel` x res^2 / batch,
    the family's factor (ADA's 0.0002, Karras et al. 2020, App. D; see each family's record). A starting point:
    --gamma sets it."""
    return per_pixel * resolution**2 / batch


def _layouts(preset: Preset) -> dict:
    """G's and D's StyleGAN2 layouts (the row's, under a given --g-arch/--d-arch), for the networks that have the
    choice: StyleGAN2's G, and the StyleGAN2 D that StyleGAN3 trains with too (R3GAN's networks have none)."""
    family = family_of_preset(preset)
    return {
        "model.g_arch": preset.g_arch if family.g_layouts else None,
        "model.d_arch": preset.d_arch if family.d_layouts else None,
    }


def _attention(preset: Preset, attention: dict[str, tuple[int, ...]]) -> dict:
    """Where G and D attend (`attention`: the parsed --g-attn and --d-attn), in the networks that have layouts."""
    family = family_of_preset(preset)
    return {
        "model.g_attn": attention["--g-attn"] if family.g_layouts else (),
        "model.d_attn": attention["--d-attn"] if family.d_layouts else (),
    }


def _ema_kimg(row: Preset, preset: Preset, batch: int) -> float:
    """EMA half-life. StyleGAN3's released setup derives it from the batch actually trained with (10 kimg at batch 32,
    --batch included); ADA's `auto` from the batch it derived, whatever --batch says."""
    if row.ema_kimg is None and family_of_preset(preset).ema_from_trained_batch:
        return batch * 10 / 32
    return preset.ema_kimg


def _fp16_res_default(preset: Preset, precision: str | None, pretrained: PretrainedFacts | None) -> int:
    """Layers in reduced precision without --fp16-res: under the row's reduced mode (fp16; R3GAN: bf16, whose
    released configurations run their top stages in bfloat16) the pretrained network's (as it was trained), else the
    row's recipe (StyleGAN3: the top 4 octaves, as released); otherwise the field's default (autocast)."""
    default = _field_default("precision.fp16_res")
    if precision != family_of_preset(preset).reduced_mode:
        return default
    return pretrained.g_arch.get("num_fp16_res", 0) if pretrained is not None else _pick(preset.fp16_res, default)


def _reduced_stages_when_auto(cfg: Config, options: TrainOptions, preset: Preset, pretrained) -> Config:
    """A family's bfloat16 stages (R3GAN's) also where `--precision auto` chose bf16 (after the options were
    resolved); a family whose reduced precision is fp16 clamps where it runs in fp16, a choice made with its fp16
    layers before auto is resolved."""
    bf16_stages = family_of(cfg.model.generator).reduced_mode == "bf16"
    if not bf16_stages or options.fp16_res is not None or options.precision is not None:
        return cfg
    fp16_res = _fp16_res_default(preset, cfg.precision.mode, pretrained)
    return dataclasses.replace(cfg, precision=dataclasses.replace(cfg.precision, fp16_res=fp16_res))


def _blur_sigma(preset: Preset, pretrained: PretrainedFacts | None) -> float | None:
    """The row's blurred-D warm-up (StyleGAN3-R, App. D), except when fine-tuning a pretrained network: it is past
    the warm-up, and the released setup disables the blur when it resumes from a network."""
    return None if pretrained is not None else preset.blur_sigma


# ADA's speed when fine-tuning (kimg for p to go from 0 to 1): the released setups make ADA react faster when they
# resume from a network (100 instead of 500), as a short run on new data needs p to move within its length.
FINE_TUNING_ADA_KIMG = 100.0


def _ema_rampup(preset: Preset, pretrained: PretrainedFacts | None) -> float | None:
    """The row's EMA ramp-up (a half-life of at most this x the images seen), except when fine-tuning: at 0 images
    the ramp-up gives G_ema no memory at all, so the first step would replace the pretrained G_ema by G; the released
    setups turn it off when they resume from a network."""
    return None if pretrained is not None else preset.ema_rampup


def _conv_clamp(family: Family, fp16_res: int, pretrained: PretrainedFacts | None) -> int | None:
    """Activations are clamped where layers run in fp16 (in the families that clamp): at +-256 (the official
    recipe), or the pretrained network's own clamp."""
    if not fp16_res or not family.clamps:
        return None
    return _pick(pretrained.g_arch.get("conv_clamp"), 256) if pretrained is not None else 256


def _lr_horizon(lr_schedule: str | None, kimg: float, preset: Preset) -> float | None:
    """Where a cosine learning-rate decay ends: at the annealing's end where the row anneals (R3GAN), else at the
    run's length."""
    if lr_schedule != "cosine":
        return None
    return _pick(preset.anneal_kimg, kimg)


def _gamma_final(gamma: float, preset: Preset) -> float | None:
    """R3GAN's gamma at the end of the annealing: the row's ratio of final to start value (a tenth, as released)
    applied to the gamma trained with, so that --gamma moves the whole schedule."""
    if preset.gamma_final is None:
        return None
    return gamma * preset.gamma_final / preset.gamma


def _blur_fade_kimg(preset: Preset, batch: int) -> float:
    return _pick(preset.blur_fade_kimg, 200 * batch / 32)  # the blur fades out over 200 kimg at batch 32 (App. D)


def _whole_batches(kimg: float, batch: int) -> float:
    """A preset length rounded to the nearest whole number of batches (at least one)."""
    return max(round(kimg * 1000 / batch), 1) * batch / 1000


# The lengths a user types, in kimg, by the field each sets; every one is trained as a whole number of global
# batches, so that a schedule never changes with the number of GPUs.
TYPED_LENGTHS = {
    "schedule.kimg": "--kimg",
    "schedule.tick_kimg": "--tick",
    "schedule.d_warmup_kimg": "--d-warmup-kimg",
    "optim.lr_warmup_kimg": "--lr-warmup-kimg",
    "schedule.grow_kimg": "--grow-kimg",
}


def typed_lengths(options: TrainOptions, batch: int, lr_steps: tuple[float, ...]) -> tuple[dict, tuple[str, ...]]:
    """The lengths given (TYPED_LENGTHS and --lr-steps), each rounded up to the first batch boundary at or past it,
    as the official code stops at the first tick past --kimg: {field: kimg}, and one note for each that moved."""
    given = {path: getattr(options, _name_of(flag)) for path, flag in TYPED_LENGTHS.items()}
    values = {path: round_up_to_batches(kimg, batch) for path, kimg in given.items() if kimg is not None}
    notes = [_rounding_note(TYPED_LENGTHS[path], given[path], kimg, batch) for path, kimg in values.items()]
    if options.lr_steps is not None:
        steps = [(k, round_up_to_batches(k, batch) if k > 0 else k) for k in lr_steps]  # <= 0 is refused later
        values["optim.lr_steps"] = tuple(up for _, up in steps)
        notes += [_rounding_note("--lr-steps", k, up, batch) for k, up in steps]
    return values, tuple(note for note in notes if note)


def round_up_to_batches(kimg: float, batch: int) -> float:
    """kimg rounded up to a whole number of batches of `batch` images; a length that is whole to within float
    rounding of its decimal form (2.007 kimg are 2007.0000000000002 images in floats) is not moved."""
    nimg = kimg * 1000
    whole = round(nimg)
    batches = -(-whole // batch) if abs(nimg - whole) < 1e-6 else math.ceil(nimg / batch)
    return batches * batch / 1000


def _rounding_note(flag: str, typed: float, used: float, batch: int) -> str:
    if abs(used - typed) * 1000 < 1e-6:
        return ""
    batches = round(used * 1000 / batch)
    return f"{flag} {typed:g} rounded up to {used:g} kimg: {batches} whole batch{'es' * (batches != 1)} of {batch}"


def _name_of(flag: str) -> str:
    return next(d.name for d in TRAIN_OPTIONS if d.flag == flag)
