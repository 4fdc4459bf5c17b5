"""Training controls beyond the official recipe: how their options become config fields, what makes them invalid,
and how they are described at the start of a run. Off by default, so the official presets keep the official maths.

- Learning-rate schedule (`optim.lr_*`): a factor on the base rates, a pure function of the image count
  (train/lr_schedule.py), so a resumed run continues on the same curve.
- Two-phase training (`schedule.d_warmup_kimg`, `schedule.d_steps`): D alone first, then K D steps per G step
  (train/cadence.py).
- Gradient clipping (`optim.clip_grad_g/d`): the global norm of a network's gradient, per optimiser step.
- Augmentation (`augment.*`): ADA, the same pipeline at a fixed p, DiffAugment, or none.

This module imports neither torch nor click.
"""

LR_SCHEDULES = ("constant", "cosine", "step")
DIFFAUG_OPS = ("color", "translation", "cutout")
ADA_PIPES = ("bgc", "bgcfnc")


def _parse_kimg_list(text) -> tuple[float, ...] | str:
    """'100,250' or a sequence of numbers -> (100.0, 250.0); an error message when it is not a list of numbers."""
    parts = text.split(",") if isinstance(text, str) else list(text)
    try:
        return tuple(float(part) for part in parts if str(part).strip())
    except ValueError:
        return f"--lr-steps {text}: not a comma-separated list of kimg values; write e.g. --lr-steps 100,250"


def optim_fields(given: dict, kimg: float) -> tuple[dict, list[str]]:
    """OptimConfig fields from the options given (None = not given), and the problems found parsing them.

    Cosine decay ends at the run's length (`kimg`), stored as `lr_horizon_kimg` so that a resumed run with a longer
    --kimg stays on the curve it started on unless --allow-config-change says otherwise."""
    fields = {key: given[key] for key in ("lr_schedule", "lr_warmup_kimg", "lr_min_ratio", "lr_gamma") if key in given}
    problems = []
    if "lr_steps" in given:
        steps = _parse_kimg_list(given["lr_steps"])
        if isinstance(steps, str):
            problems.append(steps)
        else:
            fields["lr_steps"] = steps
    if fields.get("lr_schedule") == "cosine":
        fields["lr_horizon_kimg"] = kimg
    for net in ("g", "d"):
        clip = given.get(f"clip_grad_{net}", given.get("clip_grad"))
        if clip is not None:
            fields[f"clip_grad_{net}"] = clip
    return fields, problems


def augment_fields(given: dict) -> dict:
    """AugmentConfig fields from the options given."""
    names = {"aug": "mode", "target": "target", "ada_kimg": "ada_kimg", "aug_pipe": "pipe",
             "ada_interval": "ada_interval", "aug_p": "p", "diffaug_policy": "diffaug_policy"}  # fmt: skip
    return {field: given[option] for option, field in names.items() if option in given}


def problems(cfg) -> list[str]:
    """Every invalid value or combination of the controls, one message each."""
    o, s, a = cfg.optim, cfg.schedule, cfg.augment
    out = []
    if o.lr_schedule not in LR_SCHEDULES:
        out.append(f"--lr-schedule {o.lr_schedule}: unknown; use one of {', '.join(LR_SCHEDULES)}")
    if o.lr_steps and o.lr_schedule != "step":
        out.append("--lr-steps: only used by --lr-schedule step; add it or drop --lr-steps")
    if o.lr_schedule == "step" and not o.lr_steps:
        out.append("--lr-schedule step: needs --lr-steps KIMG,KIMG (where the rate is multiplied by --lr-gamma)")
    if list(o.lr_steps) != sorted(set(o.lr_steps)) or any(k <= 0 for k in o.lr_steps):
        out.append(f"--lr-steps {','.join(f'{k:g}' for k in o.lr_steps)}: must be positive and increasing")
    if not 0 <= o.lr_min_ratio <= 1:
        out.append(f"--lr-min-ratio {o.lr_min_ratio:g}: must be in [0, 1] (a fraction of the base rate)")
    if not 0 < o.lr_gamma <= 1:
        out.append(f"--lr-gamma {o.lr_gamma:g}: must be in (0, 1] (the factor at each of --lr-steps)")
    if o.lr_horizon_kimg is not None and o.lr_warmup_kimg >= o.lr_horizon_kimg:
        out.append(f"--lr-warmup-kimg {o.lr_warmup_kimg:g}: must be shorter than the cosine decay (--kimg)")
    for flag, norm in (("--clip-grad-g", o.clip_grad_g), ("--clip-grad-d", o.clip_grad_d)):
        if norm is not None and not norm > 0:
            out.append(f"{flag} {norm:g}: must be a positive gradient norm (try 0.5 to 1)")
    if s.d_steps < 1:
        out.append(f"--d-steps {s.d_steps}: must be at least 1 D step per G step")
    if s.d_warmup_kimg >= s.kimg:
        out.append(f"--d-warmup-kimg {s.d_warmup_kimg:g}: must be shorter than --kimg {s.kimg:g}, or G never trains")
    out += _augment_problems(a)
    return out


def _augment_problems(a) -> list[str]:
    out = []
    if a.pipe not in ADA_PIPES:
        out.append(f"--aug-pipe {a.pipe}: unknown; use one of {', '.join(ADA_PIPES)}")
    if a.ada_interval < 1:
        out.append(f"--ada-interval {a.ada_interval}: must be a positive number of D steps; the paper uses 4")
    if not 0 <= a.p <= 1:
        out.append(f"--aug-p {a.p:g}: must be a probability in [0, 1]")
    if a.mode != "fixed" and a.p > 0:
        out.append("--aug-p: only used by --aug fixed; add it or drop --aug-p")
    ops = [op.strip() for op in a.diffaug_policy.split(",") if op.strip()]
    unknown = [op for op in ops if op not in DIFFAUG_OPS]
    if unknown or not ops:
        out.append(f"--diffaug-policy {a.diffaug_policy}: use a comma-separated subset of {', '.join(DIFFAUG_OPS)}")
    return out


def describe(cfg) -> list[str]:
    """Start-of-run lines for the controls (only those that are on), and for the preset notes that concern them."""
    o, s, a = cfg.optim, cfg.schedule, cfg.augment
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
    lines.append(_describe_augment(a))
    return lines


def _describe_augment(a) -> str:
    if a.mode == "ada":
        return (f"augmentation: ADA pipe {a.pipe}, target {a.target:g}, p adjusted every {a.ada_interval} D steps, "
                f"0 to 1 in {a.ada_kimg:g} kimg")  # fmt: skip
    if a.mode == "fixed":
        return f"augmentation: pipe {a.pipe} at fixed p {a.p:g}"
    if a.mode == "diffaug":
        return f"augmentation: DiffAugment {a.diffaug_policy} on every image D sees"
    return "augmentation: none"
