"""What the start of a run (and `--dry-run`) prints besides the Config: the values the preset and the flags
implied, one line each. Few dials are exposed and the rest is derived, so the user sees what was derived."""

from ganforge.config import AugmentConfig, Config, PrecisionConfig
from ganforge.families import family_of
from ganforge.presets import auto_batch


def describe_derived(cfg: Config) -> list[str]:
    """The values the preset and the flags implied, one line each, for the start-of-run printout: few dials are
    exposed and the rest is derived, so the user sees what was derived."""
    s, lo = cfg.schedule, cfg.loss
    return [
        f"batch {s.batch} = {s.batch_gpu} per micro-batch x {cfg.world_size} process(es) x {cfg.accumulation} "
        f"accumulation step(s)",
        *family_of(cfg.model.generator).describe(cfg),
        f"{s.kimg:g} kimg in ticks of {s.tick_kimg:g} kimg; snapshot + checkpoint every {s.snap} ticks",
        *s.rounded,
        *_describe_controls(cfg),
        _describe_augment(cfg.augment, cfg.schedule.anneal_kimg is not None),
        *_preset_notes(cfg),
        *_describe_auto(cfg.precision),
        *_describe_memory(cfg),
    ] + ([f"D blur sigma {lo.blur_sigma:g} fading to 0 over {lo.blur_fade_kimg:g} kimg"] if lo.blur_sigma else [])


def _describe_controls(cfg: Config) -> list[str]:
    """The learning-rate schedule, clipping and two-phase training, only where they are on."""
    o, s = cfg.optim, cfg.schedule
    lines = []
    warmup = f" after a linear warm-up of {o.lr_warmup_kimg:g} kimg" if o.lr_warmup_kimg else ""
    if o.lr_schedule == "cosine":
        lines.append(
            f"learning rate: cosine from the base rate to x{o.lr_min_ratio:g} at {o.lr_horizon_kimg:g} kimg{warmup}"
        )
    elif o.lr_schedule == "step":
        lines.append(
            f"learning rate: x{o.lr_gamma:g} at each of {', '.join(f'{k:g}' for k in o.lr_steps)} kimg{warmup}"
        )
    elif warmup:
        lines.append(f"learning rate: constant{warmup}")
    if o.freeze_d:
        lines.append(f"D's first {o.freeze_d} layers from the input frozen (FreezeD): no gradient, no optimiser state")
    if o.freeze_g_mapping:
        lines.append("G's mapping network frozen: no gradient, no optimiser state (W stays the starting model's)")
    for net, norm in (("G", o.clip_grad_g), ("D", o.clip_grad_d)):
        if norm is not None:
            lines.append(f"gradient clipping: {net}'s global gradient norm capped at {norm:g}")
    if s.d_warmup_kimg or s.d_steps > 1:
        lines.append(f"phases: D alone for {s.d_warmup_kimg:g} kimg, then {s.d_steps} D step(s) per G step")
    return lines


def _describe_memory(cfg: Config) -> list[str]:
    if not cfg.runtime.grad_checkpoint:
        return []
    return [
        "gradient checkpointing: G's synthesis blocks and D's blocks recompute their activations in backward "
        "(less memory, one more forward of each block per backward; the same gradients)"
    ]


def _describe_auto(p: PrecisionConfig) -> list[str]:
    return [f"precision {p.mode} (auto: {p.auto_reason})"] if p.auto_reason else []


def _describe_augment(a: AugmentConfig, annealed: bool) -> str:
    if a.mode == "ada":
        return (
            f"augmentation: ADA pipe {a.pipe}, target {a.target:g}, p adjusted every {a.ada_interval} D steps, "
            f"0 to 1 in {a.ada_kimg:g} kimg"
        )
    if a.mode == "fixed":
        return f"augmentation: pipe {a.pipe} at fixed p {a.p:g}{' (annealed from 0)' if annealed else ''}"
    if a.mode == "diffaug":
        return f"augmentation: DiffAugment {a.diffaug_policy} on every image D sees"
    return "augmentation: none"


def _preset_notes(cfg: Config) -> list[str]:
    """Where a preset knowingly departs from what a reader of the official code might expect."""
    notes = []
    derived_batch = auto_batch(cfg.data.resolution, cfg.world_size)
    if cfg.preset == "auto" and cfg.schedule.batch != derived_batch:
        notes.append(
            f"--cfg auto with --batch {cfg.schedule.batch}: gamma and the EMA half-life are those derived "
            f"for the auto batch {derived_batch}, as in the official train.py, which derives them before "
            "--batch replaces the batch; pass --gamma to change gamma"
        )
    return notes


# Below this many images the small-data recipe (docs/fine-tuning.md) is advised: D memorises a few thousand images
# within a few kimg (ADA, Karras et al. 2020, Fig. 1), and starting from a pretrained model pays most there.
SMALL_DATASET = 5000


PRETRAINED_START = (
    "a pretrained start (--resume FILE: an NVlabs .pkl, a rosinality .pt, a snapshot, or a run of other data)"
)


def small_data_advice(cfg: Config) -> list[str]:
    """For a small dataset, one line naming what of the small-data recipe the run leaves out (none when it uses it):
    a warning where the run's settings work against it (no augmentation, ADA too slow for the run, no FreezeD on a
    pretrained start), a note where only the pretrained start is missing (training from scratch is a choice, and
    the only one where no related network exists)."""
    images = cfg.data.images
    if images is None or images >= SMALL_DATASET:
        return []
    missing = [] if cfg.run.resume_sha256 else [PRETRAINED_START]
    a, kimg = cfg.augment, cfg.schedule.kimg
    annealed = a.mode == "fixed" and cfg.schedule.anneal_kimg is not None and a.p > 0  # R3GAN's recipe
    if a.mode not in ("ada", "diffaug") and not annealed:
        missing.append(f"augmentation (--aug ada, not {a.mode})")
    elif a.mode == "ada" and a.ada_kimg > kimg:
        missing.append(
            f"an --ada-kimg within the run's length (--ada-kimg {a.ada_kimg:g} over --kimg {kimg:g}: p can rise "
            f"only {kimg / a.ada_kimg:.2g} in the whole run)"
        )
    if cfg.run.resume_sha256 and not cfg.optim.freeze_d:
        missing.append("--freeze-d 4 (FreezeD)")
    if not missing:
        return []
    kind = "note" if missing == [PRETRAINED_START] else "warning"
    return [
        f"{kind}: small dataset: {images} images, few for a GAN (D overfits them within a few kimg); the small-data "
        f"recipe (docs/fine-tuning.md) adds {'; '.join(missing)}"
    ]
