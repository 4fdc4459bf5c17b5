"""Where a run continues from (`--resume auto|new|PATH`) and which run directory it writes to (rule in rundir.py).

`find_source` looks at the file system once, when the options are resolved (`resolver.observe`): --precision auto
keeps the mode of the run it continues, and `select_run` starts from what it found. Rank 0 makes every decision that
touches the file system and broadcasts it, so all ranks agree; each rank then reads the checkpoint itself.
"""

from dataclasses import dataclass
from pathlib import Path

import torch

from ganforge import checkpoint, dist
from ganforge.config import Config
from ganforge.errors import UserError
from ganforge.snapshot import DISCRIMINATOR_FORMAT, check_weights_file, file_format
from ganforge.train import rundir
from ganforge.train.checkpointing import check_config


@dataclass(frozen=True)
class Source:
    """What a run starts from: `kind` "continue" (the run folder `path`, whose config.json is `config`), "checkpoint"
    (a checkpoint folder), "weights" ("G.safetensors[,D.safetensors]") or "fresh" (`path` None)."""

    kind: str
    path: str | None = None
    config: dict | None = None


def find_source(key: rundir.RunKey) -> Source:
    """What a run of this key starts from (rank 0 looks, every rank gets the answer); a UserError on every rank when
    --resume names nothing usable or the run to continue has a damaged config.json."""
    found = dist.broadcast_object(_look(key) if dist.is_main() else None)
    if isinstance(found, str):
        raise UserError(found)
    return found


def _look(key: rundir.RunKey) -> Source | str:
    """The source, or the problem's message."""
    try:
        found = rundir.find_run(key)
    except UserError as error:
        return error.problems[0]
    if found is not None:
        return Source("continue", str(found), rundir.run_config(found))
    resume = key.resume
    if resume in ("auto", "new"):
        return Source("fresh")
    paths = [Path(p) for p in resume.split(",")]
    if len(paths) == 1 and paths[0].is_dir():
        return Source("checkpoint", resume)
    if len(paths) <= 2 and all(p.is_file() and p.suffix == ".safetensors" for p in paths):
        try:  # a damaged or hostile file is refused here, before a run folder is made for it
            for path in paths:
                check_weights_file(path)
        except UserError as error:
            return error.problems[0]
        return Source("weights", resume)
    return (
        f"--resume {resume}: not a checkpoint folder (ckpt-*), a snapshot (.safetensors) or a snapshot and a "
        "discriminator file (G.safetensors,D.safetensors); pass one, or 'auto' / 'new'"
    )


def _load(kind: str, path: str) -> tuple[Path | None, dict | None]:
    """(checkpoint folder, its state), or (None, None) when not resuming from a checkpoint."""
    if kind == "continue":
        found = checkpoint.find_latest(Path(path) / "checkpoints")
        if found is None:
            raise UserError(
                f"--resume: no valid checkpoint in {path}/checkpoints (see the warnings above); pass "
                "--resume new to start a new run, or --resume PATH with a checkpoint to use"
            )
        return found
    if kind == "checkpoint":
        return Path(path), checkpoint.load(Path(path))
    return None, None


def select_run(cfg: Config, device: torch.device, found: Source) -> tuple[Path, dict | None, list[Path]]:
    """-> (run directory, checkpoint state or None, weight files to start from: a snapshot and/or a discriminator
    file), from what `find_source` found. Collective."""
    kind, path = found.kind, found.path
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
        dist.print0(
            f"initialising {'D from discriminator file' if is_d else 'G and G_ema from snapshot'} {path}: weights only"
        )
    dist.print0(f"{', '.join(fresh)} start fresh")
