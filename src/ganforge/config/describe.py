"""What the start of a run (and `--dry-run`) prints besides the Config: the values the preset and the flags
implied, one line each. Few dials are exposed and the rest is derived, so the user sees what was derived."""

import math

from ganforge.config import AugmentConfig, Config, PrecisionConfig, lazy_ratio
from ganforge.presets import auto_batch


def describe_derived(cfg: Config) -> list[str]:
    """The values the preset and the flags implied, one line each, for the start-of-run printout: few dials are
    exposed and the rest is derived, so the user sees what was derived."""
    s, lo = cfg.schedule, cfg.loss
    return [
        f"batch {s.batch} = {s.batch_gpu} per micro-batch x {cfg.world_size} process(es) x {cfg.accumulation} "
        f"accumulation step(s)",
        *(_describe_r3gan(cfg) if cfg.model.generator == "r3gan" else _describe_stylegan(cfg)),
        f"{s.kimg:g} kimg in ticks of {s.tick_kimg:g} kimg; snapshot + checkpoint every {s.snap} ticks",
        *s.rounded,
        *_describe_controls(cfg),
        _describe_augment(cfg.augment, cfg.schedule.anneal_kimg is not None),
        *_preset_notes(cfg),
        *_describe_auto(cfg.precision),
        *_describe_memory(cfg),
    ] + ([f"D blur sigma {lo.blur_sigma:g} fading to 0 over {lo.blur_fade_kimg:g} kimg"] if lo.blur_sigma else [])


def _describe_stylegan(cfg: Config) -> list[str]:
    s, lo, m = cfg.schedule, cfg.loss, cfg.model
    return (
        [
            f"R1 gamma {lo.gamma:g} every {lo.r1_interval} steps; path length weight {lo.pl_weight:g} every "
            f"{lo.pl_interval} steps",
            f"lazy regularisation: G lr x {lazy_ratio(lo.pl_interval):.4f}, D lr x {lazy_ratio(lo.r1_interval):.4f} "
            f"(betas raised to the same power)",
            f"EMA half-life {s.ema_kimg:g} kimg, ramp-up {s.ema_rampup}",
            f"networks: {m.generator}, channel base {m.channel_base}, max {m.channel_max}, mapping {m.mapping_layers} "
            f"layers, minibatch-stddev group {m.mbstd_group}",
            "layouts: "
            + ", ".join(f"{net} {layout}" for net, layout in (("G", m.g_arch), ("D", m.d_arch)) if layout)
            + "".join(
                f"; {net} attends at {','.join(map(str, at))}" for net, at in (("G", m.g_attn), ("D", m.d_attn)) if at
            ),
        ]
        + _describe_aspect(cfg)
        + _describe_growth(cfg)
    )


def _describe_aspect(cfg: Config) -> list[str]:
    rows, cols = cfg.data.aspect
    if (rows, cols) == (1, 1):
        return []
    res = cfg.data.resolution
    return [
        f"non-square images {res * cols}x{res * rows}: blocks from 4 to {res} px on the short side, a "
        f"{4 * cols}x{4 * rows} learned constant in G and a {4 * cols}x{4 * rows} last block in D"
    ]


def _describe_growth(cfg: Config) -> list[str]:
    s, res = cfg.schedule, cfg.data.resolution
    if not cfg.model.grow:
        return []
    doublings = round(math.log2(res // s.grow_from))
    return [
        f"growth: from {s.grow_from} px to {res} px, {s.grow_kimg:g} kimg at each resolution and {s.grow_kimg:g} kimg "
        f"per fade; fully grown at {s.grow_kimg * 2 * doublings:g} kimg; batch {s.batch} at every stage"
    ]


def _describe_r3gan(cfg: Config) -> list[str]:
    s, lo, o, m = cfg.schedule, cfg.loss, cfg.optim, cfg.model
    over = f"annealed by a half cosine over {s.anneal_kimg:g} kimg" if s.anneal_kimg is not None else "constant"
    final = (
        (lambda start, end: f"{start:g} to {end:g}") if s.anneal_kimg is not None else (lambda start, _: f"{start:g}")
    )
    return [
        "loss: relativistic pairing (RpGAN) with R1 on reals and R2 on fakes at every D step (no lazy "
        "regularisation); D steps before G steps",
        f"{over}: gamma {final(lo.gamma, lo.gamma_final)}, Adam beta2 {final(o.beta2, o.beta2_final)} (beta1 "
        f"{o.beta1:g}), EMA half-life {final(0 if s.anneal_kimg is not None else s.ema_kimg, s.ema_kimg)} kimg",
        f"networks: r3gan, widths min({m.channel_base} / res, {m.channel_max}), groups of {m.group_channels} channels, "
        f"{m.blocks_per_stage} blocks per stage, z {m.z_dim}",
    ] + ([f"bf16: the top {p.fp16_res} stage(s) of G and D compute in bfloat16 (as released), the others in float32; "
          "no autocast"] if (p := cfg.precision).fp16_res else [])  # fmt: skip


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


# Below this many images the small-data recipe (README, Small datasets) is advised: D memorises a few thousand images
# within a few kimg (ADA, Karras et al. 2020, Fig. 1), and starting from a pretrained model pays most there.
SMALL_DATASET = 5000


def small_data_advice(cfg: Config) -> list[str]:
    """For a small dataset, one line naming what of the small-data recipe the run leaves out (none when it uses it)."""
    images = cfg.data.images
    if images is None or images >= SMALL_DATASET:
        return []
    missing = []
    if not cfg.run.resume_sha256:
        missing.append(
            "a pretrained start (--resume FILE: an NVlabs .pkl, a rosinality .pt, a snapshot, or a run of other data)"
        )
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
    return [
        f"small dataset: {images} images, few for a GAN (D overfits them within a few kimg); the small-data recipe "
        f"(README, Small datasets) adds {'; '.join(missing)}"
    ]
