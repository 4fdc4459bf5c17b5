"""Where a run continues from (`--resume auto|new|PATH`) and which run directory it writes to (rule in rundir.py).

Rank 0 makes every decision that touches the file system and broadcasts it, so all ranks agree; each rank then
reads the checkpoint itself.
"""

from pathlib import Path

import torch

from ganforge import checkpoint, dist
from ganforge.config import Config
from ganforge.errors import UserError
from ganforge.train import rundir


def _source(cfg: Config) -> tuple[str, str | None]:
    """(kind, path): ("continue", run dir) | ("checkpoint", folder) | ("snapshot", file) | ("fresh", None)."""
    found = rundir.find_run(cfg)
    if found is not None:
        return "continue", str(found)
    resume = cfg.run.resume
    if resume in ("auto", "new"):
        return "fresh", None
    path = Path(resume)
    if path.is_dir():
        return "checkpoint", str(path)
    if path.is_file() and path.suffix == ".safetensors":
        return "snapshot", str(path)
    return (
        "error",
        f"--resume {resume}: not a checkpoint folder (ckpt-*) or a snapshot (.safetensors); pass one, "
        "or 'auto' / 'new'",
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


def select_run(cfg: Config, device: torch.device) -> tuple[Path, dict | None, Path | None]:
    """-> (run directory, checkpoint state or None, snapshot path or None). Collective."""
    kind, path = dist.broadcast_object(_source(cfg) if dist.is_main() else None)
    if kind == "error":
        raise UserError(path)
    source, state = _load(kind, path)
    notes = []
    if state is not None:
        from ganforge.train.state import check_config

        notes = check_config(state, cfg, source)
    run_dir = None
    if dist.is_main():
        run_dir = Path(path) if kind == "continue" else rundir.create_run(cfg)
        rundir.write_config(run_dir, cfg)
        rundir.write_env(run_dir, device)
        _explain(kind, source or path, state, notes, run_dir)
    run_dir = Path(dist.broadcast_object(str(run_dir) if run_dir else None))
    return run_dir, state, Path(path) if kind == "snapshot" else None


def _explain(kind: str, path, state: dict | None, notes: list[str], run_dir: Path) -> None:
    """Say on the terminal what is being resumed from, before the loop starts."""
    if state is not None:
        dist.print0(f"resuming {run_dir} from {path} at {state['loop']['cur_nimg'] / 1000:g} kimg")
    if kind == "snapshot":
        dist.print0(f"initialising G and G_ema from snapshot {path}: weights only; D, optimisers and progress start "
                    "fresh")  # fmt: skip
    for note in notes:
        dist.print0(f"config change allowed by --allow-config-change: {note}")
