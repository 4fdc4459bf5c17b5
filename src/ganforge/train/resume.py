"""Where a run continues from (`--resume auto|new|PATH`) and which run directory it writes to (rule in rundir.py).

Rank 0 makes every decision that touches the file system and broadcasts it, so all ranks agree; each rank then
reads the checkpoint itself.
"""

from pathlib import Path

import torch

from ganforge import checkpoint, dist
from ganforge.config import Config
from ganforge.errors import UserError
from ganforge.snapshot import DISCRIMINATOR_FORMAT, file_format
from ganforge.train import rundir
from ganforge.train.checkpointing import check_config


def _source(cfg: Config) -> tuple[str, str | None]:
    """(kind, path): ("continue", run dir) | ("checkpoint", folder) | ("weights", "G.safetensors[,D.safetensors]")
    | ("fresh", None)."""
    try:
        found = rundir.find_run(cfg)
    except UserError as error:  # rank 0 alone decides: the problem goes to every rank, which raise it together
        return "error", error.problems[0]
    if found is not None:
        return "continue", str(found)
    resume = cfg.run.resume
    if resume in ("auto", "new"):
        return "fresh", None
    paths = [Path(p) for p in resume.split(",")]
    if len(paths) == 1 and paths[0].is_dir():
        return "checkpoint", resume
    if len(paths) <= 2 and all(p.is_file() and p.suffix == ".safetensors" for p in paths):
        return "weights", resume
    return (
        "error",
        f"--resume {resume}: not a checkpoint folder (ckpt-*), a snapshot (.safetensors) or a snapshot and a "
        "discriminator file (G.safetensors,D.safetensors); pass one, or 'auto' / 'new'",
    )


def _load(kind: str, path: str) -> tuple[Path | None, dict | None]:
    """(checkpoint folder, its state), or (None, None) when not resuming from a checkpoint."""
    if kind == "continue":
        found = checkpoint.find_latest(Path(path) / "checkpoints")
        if found is None:
            raise UserError(f"--resume: no valid checkpoint in {path}/checkpoints (see the warnings above); pass "
                            "--resume new to start a new run, or --resume PATH with a checkpoint to use")  # fmt: skip
        return found
    if kind == "checkpoint":
        return Path(path), checkpoint.load(Path(path))
    return None, None


def select_run(cfg: Config, device: torch.device) -> tuple[Path, dict | None, list[Path]]:
    """-> (run directory, checkpoint state or None, weight files to start from: a snapshot and/or a discriminator
    file). Collective."""
    kind, path = dist.broadcast_object(_source(cfg) if dist.is_main() else None)
    if kind == "error":
        raise UserError(path)
    source, state = _load(kind, path)
    notes = []
    if state is not None:
        notes = check_config(state, cfg, source)
    run_dir = None
    if dist.is_main():
        run_dir = Path(path) if kind == "continue" else rundir.create_run(cfg)
        rundir.write_config(run_dir, cfg)
        rundir.write_env(run_dir, device)
        _explain(kind, source or path, state, notes, run_dir)
    run_dir = Path(dist.broadcast_object(str(run_dir) if run_dir else None))
    return run_dir, state, [Path(p) for p in path.split(",")] if kind == "weights" else []


def _explain(kind: str, path, state: dict | None, notes: list[str], run_dir: Path) -> None:
    """Say on the terminal what is being resumed from, before the loop starts."""
    if state is not None:
        dist.print0(f"resuming {run_dir} from {path} at {state['loop']['cur_nimg'] / 1000:g} kimg")
    if kind == "weights":
        _explain_weights(path.split(","))
    for note in notes:
        dist.print0(f"config change allowed by --allow-config-change: {note}")


def _explain_weights(paths: list[str]) -> None:
    fresh = ["G", "D", "optimisers and progress"]
    for path in paths:
        is_d = file_format(path) == DISCRIMINATOR_FORMAT
        fresh = [part for part in fresh if part != ("D" if is_d else "G")]
        dist.print0(f"initialising {'D from discriminator file' if is_d else 'G and G_ema from snapshot'} {path}: "
                    "weights only")  # fmt: skip
    dist.print0(f"{', '.join(fresh)} start fresh")
