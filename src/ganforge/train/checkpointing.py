"""Moving all training state into and out of a checkpoint, checking that a checkpoint fits this configuration, and
starting from a snapshot's weights.

A checkpoint holds everything that influences later steps: G, D, G_ema, both optimisers and scalers, the
augmentation probability and ADA's accumulators, the path-length mean, counters, RNG states (docs/architecture.md
lists its files). The loop's per-step seeding makes the RNG states redundant for exactness, but they are restored too.
"""

from pathlib import Path

import torch

from ganforge import checkpoint
from ganforge.config import Config, config_hash, maths_differences, maths_fields
from ganforge.errors import UserError
from ganforge.nets import Generator
from ganforge.snapshot import DISCRIMINATOR_FORMAT, file_format, load_discriminator, load_snapshot
from ganforge.train.phases import Trainer


def capture(trainer: Trainer, G_ema: Generator, loop: dict) -> dict:
    """The checkpoint state of everything, as nested dicts of tensors and plain values."""
    G, D, cfg = trainer.networks["G"], trainer.networks["D"], trainer.cfg
    augment = {} if trainer.ada is None else {"pipe": trainer.augment.state_dict(), "ada": trainer.ada.state_dict()}
    return {
        "G": G.module.state_dict(),
        "D": D.module.state_dict(),
        "G_ema": G_ema.state_dict(),
        "opt_G": G.opt.state_dict(),
        "opt_D": D.opt.state_dict(),
        "scaler_G": G.scaler.state_dict(),
        "scaler_D": D.scaler.state_dict(),
        "rng": checkpoint.capture_rng(),
        "sampler": {"position": loop["cur_nimg"]},
        "augment": augment,
        "loop": {**loop, "pl_mean": trainer.pl_mean.detach().cpu(), "nonfinite_in_a_row": trainer.nonfinite_in_a_row},
        # Only the fields that define the training maths (what a resume checks): no paths, so two runs of the same
        # command in different folders write identical checkpoints.
        "config_hash": config_hash(cfg),
        "config": maths_fields(cfg.to_dict()),
    }


def restore(state: dict, trainer: Trainer, G_ema: Generator) -> dict:
    """Load a checkpoint's state into the training objects; returns its loop counters."""
    device = trainer.pl_mean.device
    try:
        trainer.G.load_state_dict(state["G"])
        trainer.D.load_state_dict(state["D"])
        G_ema.load_state_dict(state["G_ema"])
    except RuntimeError as error:
        raise UserError(
            f"--resume: the checkpoint's networks do not fit this configuration ({str(error).splitlines()[0][:200]}); "
            "resume with the configuration it was trained with, or pass --resume new"
        ) from None
    for name, network in trainer.networks.items():
        _load_optimizer(network.opt, state[f"opt_{name}"])
        if state[f"scaler_{name}"]:
            network.scaler.load_state_dict(state[f"scaler_{name}"])
    if trainer.ada is not None and state["augment"]:
        trainer.augment.load_state_dict(state["augment"]["pipe"])
        trainer.ada.load_state_dict(state["augment"]["ada"])
    loop = dict(state["loop"])
    trainer.pl_mean = loop.pop("pl_mean").to(device)
    trainer.nonfinite_in_a_row = int(loop.pop("nonfinite_in_a_row"))
    checkpoint.restore_rng(state["rng"])
    return loop


def _load_optimizer(opt: torch.optim.Optimizer, saved: dict) -> None:
    """Adam's moments and step counts from the checkpoint; its lr, betas and eps from this run's configuration, which
    differ from the checkpoint's only under --allow-config-change (a saved state_dict carries them too)."""
    configured = [{key: group[key] for key in ("lr", "betas", "eps")} for group in opt.param_groups]
    opt.load_state_dict(saved)
    for group, settings in zip(opt.param_groups, configured, strict=True):
        group.update(settings)


# Fields that set the networks' tensor shapes, with the option that sets each: a checkpoint trained with other values
# cannot be loaded at all, not even under --allow-config-change.
SHAPE_FIELDS = {
    "data.resolution": "--data (its resolution)",
    "data.channels": "--data (its channels)",
    "data.label_dim": "--cond / --data (its labels)",
    "model.z_dim": "--cfg",
    "model.w_dim": "--cfg",
    "model.mapping_layers": "--cfg",
    "model.channel_base": "--cfg",
    "model.channel_max": "--cfg",
    "model.generator": "--cfg",
    "model.synthesis_layers": "--cfg",
}


def check_config(state: dict, cfg: Config, source: Path) -> list[str]:
    """Refuse a checkpoint whose training maths differ from `cfg`, unless --allow-config-change (never when the
    networks' shapes differ); returns the differences (to be logged when allowed)."""
    differences = maths_differences(state["config"], cfg.to_dict())
    shapes = [
        f"{line} (set by {SHAPE_FIELDS[line.split(':')[0]]})"
        for line in differences
        if line.split(":")[0] in SHAPE_FIELDS
    ]
    if shapes:
        raise UserError(
            f"--resume: {source} holds networks of another shape than these options make (checkpoint -> now):",
            *shapes,
            "no option can load them: pass the --data and --cfg that run was trained with, or --resume new to start "
            "a new run",
        )
    if differences and not cfg.run.allow_config_change:
        raise UserError(
            f"--resume: {source} was trained with a different configuration; these fields differ (checkpoint -> now):",
            *differences,
            "pass --allow-config-change to continue it with the new values, or --resume new to start a new run",
        )
    return differences


# Settings that change how a network computes (fp16 layers, activation clamping) but not which weights it has: an
# imported official network (fp16 in its top 4 resolutions, clamp 256) still fits a run that trains in fp32.
_PRECISION_ONLY = ("num_fp16_res", "conv_clamp")


def _same_weights(a: dict, b: dict) -> bool:
    """Do two network configs describe the same set of weights?"""
    return {k: v for k, v in a.items() if k not in _PRECISION_ONLY} == {
        k: v for k, v in b.items() if k not in _PRECISION_ONLY
    }


def _weights_mismatch(path: Path, saved: dict, built: dict) -> str:
    """Which of the file's architecture values differ from what these options build, and the option that sets each."""
    differing = [
        k for k in sorted(set(saved) | set(built)) if k not in _PRECISION_ONLY and saved.get(k) != built.get(k)
    ]
    details = ", ".join(f"{k} {saved.get(k)} (these options: {built.get(k)})" for k in differing)
    fixes = []
    if "resolution" in differing or "img_channels" in differing:
        res, channels = saved.get("resolution"), saved.get("img_channels")
        fixes.append(
            f"--data with {res}x{res} images of {channels} channel(s) (`ganforge dataset build --resolution {res}`)"
        )
    if "c_dim" in differing:
        fixes.append("--cond with a dataset of the same labels" if saved.get("c_dim") else "no --cond")
    if set(differing) - {"resolution", "img_channels", "c_dim"}:
        fixes.append("the --cfg it was trained with")
    return (
        f"--resume {path}: its network differs from the one these options build: {details}; pass {' and '.join(fixes)}"
    )


def load_weights(paths: list[Path], trainer: Trainer, G_ema: Generator) -> None:
    """Initialise G and G_ema from a snapshot and/or D from a discriminator file (weights only: optimisers and
    progress start fresh), each checked to have this configuration's architecture."""
    kinds = [file_format(path) == DISCRIMINATOR_FORMAT for path in paths]
    if len(kinds) == 2 and kinds[0] == kinds[1]:
        raise UserError(f"--resume {','.join(map(str, paths))}: give one snapshot and one discriminator file")
    for path, is_discriminator in zip(paths, kinds, strict=True):
        net, _ = (load_discriminator if is_discriminator else load_snapshot)(path)
        targets = [trainer.D] if is_discriminator else [trainer.G, G_ema]
        if not _same_weights(net.config, targets[0].config):
            raise UserError(_weights_mismatch(path, net.config, targets[0].config))
        with torch.no_grad():
            for module in targets:
                module.load_state_dict(net.state_dict())
