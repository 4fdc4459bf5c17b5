"""Moving all training state into and out of a checkpoint, checking that a checkpoint fits this configuration, and
starting from a snapshot's weights.

A checkpoint holds everything that influences later steps: G, D, G_ema, both optimisers and scalers, the
augmentation probability and ADA's accumulators, the path-length mean, counters, RNG states (docs/architecture.md
lists its files). The loop's per-step seeding makes the RNG states redundant for exactness, but they are restored too.
"""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from ganforge import checkpoint
from ganforge.checkpoint.layout import STATE_KEYS
from ganforge.config import SHAPE_FIELDS, Config, config_hash, maths_differences, maths_fields
from ganforge.data.source import DataSource
from ganforge.errors import UserError
from ganforge.interop.pretrained import read_pretrained
from ganforge.nets import Generator
from ganforge.train.phases import Network, Trainer


@dataclass
class _Run:
    """The training objects a checkpoint's state is captured from and restored into; `loop` holds the loop's
    counters (given to `capture`, filled by `restore`), `data` the training data's source (its position)."""

    trainer: Trainer
    G_ema: Generator
    loop: dict
    data: DataSource


@dataclass(frozen=True)
class _Part:
    """How one entry of the state (`checkpoint.layout`) is taken from a run and put back into one; `restore` None
    where the entry is read where it is used (the config, by `check_config`)."""

    capture: Callable[[_Run], object]
    restore: Callable[[object, _Run], None] | None = None


def capture(trainer: Trainer, G_ema: Generator, loop: dict, data: DataSource) -> dict:
    """The checkpoint state of everything, as nested dicts of tensors and plain values; `data` is the training data's
    source, whose position is the loop's."""
    run = _Run(trainer, G_ema, loop, data)
    return {key: _PARTS[key].capture(run) for key in STATE_KEYS}


def restore(state: dict, trainer: Trainer, G_ema: Generator, data: DataSource) -> dict:
    """Load a checkpoint's state into the training objects and the data source; returns its loop counters."""
    run = _Run(trainer, G_ema, {}, data)
    for key in STATE_KEYS:
        if _PARTS[key].restore is not None:
            _PARTS[key].restore(state[key], run)
    return run.loop


def _trained(name: str) -> dict[str, _Part]:
    """The parts of a trained network `name` (G or D): its weights, its Adam and its loss scaler."""

    def network(run: _Run) -> Network:
        return run.trainer.networks[name]

    return {
        name: _Part(
            lambda run: network(run).module.state_dict(), lambda value, run: _load_network(network(run).module, value)
        ),
        f"opt_{name}": _Part(
            lambda run: network(run).opt.state_dict(), lambda value, run: _load_optimizer(network(run).opt, value)
        ),
        f"scaler_{name}": _Part(
            lambda run: network(run).scaler.state_dict(), lambda value, run: _load_scaler(network(run).scaler, value)
        ),
    }


def _load_network(module: torch.nn.Module, saved: dict) -> None:
    try:
        module.load_state_dict(saved)
    except RuntimeError as error:
        raise UserError(
            f"--resume: the checkpoint's networks do not fit this configuration ({str(error).splitlines()[0][:200]}); "
            "resume with the configuration it was trained with, or pass --resume new"
        ) from None


def _load_scaler(scaler: torch.amp.GradScaler, saved: dict) -> None:
    if saved:  # empty when the run trains without loss scaling
        scaler.load_state_dict(saved)


def _capture_augment(run: _Run) -> dict:
    trainer = run.trainer
    return {} if trainer.ada is None else {"pipe": trainer.augment.state_dict(), "ada": trainer.ada.state_dict()}


def _restore_augment(saved: dict, run: _Run) -> None:
    if run.trainer.ada is not None and saved:
        run.trainer.augment.load_state_dict(saved["pipe"])
        run.trainer.ada.load_state_dict(saved["ada"])


def _capture_loop(run: _Run) -> dict:
    return {
        **run.loop,
        "pl_mean": run.trainer.pl_mean.detach().cpu(),
        "nonfinite_in_a_row": int(run.trainer.nonfinite_in_a_row),
        "intra_op_threads": torch.get_num_threads(),
    }


def _restore_loop(saved: dict, run: _Run) -> None:
    run.loop = dict(saved)
    run.trainer.pl_mean = run.loop.pop("pl_mean").to(run.trainer.pl_mean.device)
    run.trainer.nonfinite_in_a_row = int(run.loop.pop("nonfinite_in_a_row"))


def _capture_sampler(run: _Run) -> dict:
    state = run.data.state_dict()
    # the data read and the steps taken must agree, or a resume would train on other images than this run would
    assert state["position"] == run.loop["cur_nimg"], (state["position"], run.loop["cur_nimg"])
    return state


# Each entry of the state by its key; `capture` and `restore` go through them in the order a checkpoint stores them.
_PARTS = {
    **_trained("G"),
    **_trained("D"),
    "G_ema": _Part(lambda run: run.G_ema.state_dict(), lambda value, run: _load_network(run.G_ema, value)),
    "rng": _Part(lambda run: checkpoint.capture_rng(), lambda value, run: checkpoint.restore_rng(value)),
    "sampler": _Part(_capture_sampler, lambda value, run: run.data.load_state_dict(value)),
    "augment": _Part(_capture_augment, _restore_augment),
    "loop": _Part(_capture_loop, _restore_loop),
    # Only the fields that define the training maths (what a resume checks): no paths, so two runs of the same
    # command in different folders write identical checkpoints.
    "config_hash": _Part(lambda run: config_hash(run.trainer.cfg)),
    "config": _Part(lambda run: maths_fields(run.trainer.cfg.to_dict())),
}


def thread_change(loop: dict, device: torch.device) -> str | None:
    """What to say when a run resumes on the CPU with another intra-op thread count than the checkpoint's writer had
    (`restore`'s loop counters hold it): CPU kernels split their sums over the threads, so the sums round otherwise
    and the run continues differently from one that never stopped, where exact resume is promised. None when the
    counts agree, on other devices (whose kernels do not use these threads) and for checkpoints without the count."""
    recorded, now = loop.get("intra_op_threads"), torch.get_num_threads()
    if device.type != "cpu" or recorded is None or recorded == now:
        return None
    return (
        f"the checkpoint was written with {recorded} intra-op thread(s), this process has {now}: CPU sums round "
        f"differently, so the run will not continue exactly as one that never stopped; set OMP_NUM_THREADS={recorded} "
        "to resume it exactly"
    )


def _load_optimizer(opt: torch.optim.Optimizer, saved: dict) -> None:
    """Adam's moments and step counts from the checkpoint; its lr, betas and eps from this run's configuration, which
    differ from the checkpoint's only under --allow-config-change (a saved state_dict carries them too), and how it
    runs (fused) from this run, which also decides where torch keeps the step counts."""
    keys = ("lr", "betas", "eps", "fused")
    configured = [{key: group[key] for key in keys} for group in opt.param_groups]
    groups = [group | settings for group, settings in zip(saved["param_groups"], configured, strict=True)]
    opt.load_state_dict(saved | {"param_groups": groups})
    # Fused Adam writes each moment as if it had its parameter's shape, past the end of a smaller one: the validator
    # refuses such a checkpoint, and this keeps it so should anything else hand one over.
    for param, state in opt.state.items():
        if any(state[key].shape != param.shape for key in ("exp_avg", "exp_avg_sq") if key in state):
            raise UserError("--resume: the checkpoint's Adam moments do not fit the networks; pass --resume new")


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
            "no option can load them: pass the --data, --cfg, --cbase, --cmax, --g-arch and --d-arch that run was "
            "trained with, or "
            "--resume new to start a new run",
        )
    if differences and not cfg.run.allow_config_change:
        raise UserError(
            f"--resume: {source} was trained with a different configuration; these fields differ (checkpoint -> now):",
            *differences,
            "pass --allow-config-change to continue it with the new values, or --resume new to start a new run",
        )
    return differences


# Settings that change how a network computes (fp16 layers, activation clamping, D's minibatch-stddev group, which
# follows the batch) but not which weights it has: an imported official network (fp16 in its top 4 resolutions,
# clamp 256) still fits a run that trains in fp32.
_PRECISION_ONLY = ("num_fp16_res", "conv_clamp", "mbstd_group_size")


def _same_weights(a: dict, b: dict) -> bool:
    """Do two network configs describe the same set of weights?"""
    return {k: v for k, v in a.items() if k not in _PRECISION_ONLY} == {
        k: v for k, v in b.items() if k not in _PRECISION_ONLY
    }


def _weights_mismatch(path: str, saved: dict, built: dict) -> str:
    """The architecture values of a pretrained file that differ from the network this run builds (which the resolver
    took from the same file: it was replaced since)."""
    differing = [
        k for k in sorted(set(saved) | set(built)) if k not in _PRECISION_ONLY and saved.get(k) != built.get(k)
    ]
    details = ", ".join(f"{k} {saved.get(k)} (this run: {built.get(k)})" for k in differing)
    return (
        f"--resume {path}: its network differs from the one this run builds: {details}; the file changed after the "
        "run's options were resolved from it: run the command again"
    )


def load_pretrained(paths: list[Path], trainer: Trainer, G_ema: Generator) -> None:
    """Initialise G, G_ema and (when the files hold one) D from pretrained files (weights only: optimisers and
    progress start fresh; a file with one generator gives it to both), and ADA's p where a file recorded it and this
    run adapts p. Each network's architecture is checked against this run's: the resolver took it from the same
    files, which may have been replaced since."""
    if not paths:
        return
    pretrained = read_pretrained(paths)
    nets = pretrained.networks
    sources = {"G": nets.get("G", nets.get("G_ema")), "G_ema": nets.get("G_ema", nets.get("G")), "D": nets.get("D")}
    for name, target in (("G", trainer.G), ("G_ema", G_ema), ("D", trainer.D)):
        net = sources[name]
        if net is None:
            continue
        if not _same_weights(net.config, target.config):
            raise UserError(_weights_mismatch(",".join(map(str, paths)), net.config, target.config))
        with torch.no_grad():
            target.load_state_dict(net.state_dict())
    if pretrained.augment_p is not None and trainer.ada is not None:
        trainer.augment.p.fill_(pretrained.augment_p)
