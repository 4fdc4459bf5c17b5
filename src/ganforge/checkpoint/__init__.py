"""Training checkpoints that never lose work: atomic, verified, retained, never executed
(docs/architecture.md lists what a checkpoint holds).

    state = {"G": G.state_dict(), "opt_G": opt_G.state_dict(), "rng": capture_rng(), "loop": {...}, ...}
    save(run_dir / "checkpoints", state, tag=str(cur_nimg), retention=Retention(keep_last=3))
    state = load_latest(run_dir / "checkpoints")   # None when there is nothing valid to resume from

A checkpoint is a folder `ckpt-<nimg>/` with `tensors.safetensors`, `state.json` and `manifest.json`
(store.py describes the format). Loading parses safetensors and JSON only: no pickle, so a tampered file can make
a checkpoint invalid but can never run code.
"""

import warnings
from dataclasses import dataclass
from pathlib import Path

from ganforge import dist
from ganforge.checkpoint import resumable, store
from ganforge.checkpoint import retention as _retention
from ganforge.checkpoint.retention import Retention
from ganforge.checkpoint.rng import capture_rng, restore_rng
from ganforge.checkpoint.store import CheckpointWarning, InvalidCheckpoint, list_checkpoints
from ganforge.errors import UserError

__all__ = [
    "CheckpointWriteError",
    "CheckpointWarning",
    "InvalidCheckpoint",
    "Retention",
    "Trained",
    "capture_rng",
    "find_latest",
    "list_checkpoints",
    "load",
    "load_latest",
    "load_trained",
    "read_trained",
    "read",
    "restore_rng",
    "save",
]


class CheckpointWriteError(UserError):
    """Writing a checkpoint failed (full disk, permissions); the previous checkpoints are intact."""


def save(ckpt_dir: Path, state: dict, tag: str, retention: Retention) -> Path:
    """Write `state` as checkpoint `ckpt_dir/ckpt-<tag>` and apply `retention`; return the folder's path.

    `tag` is the training progress in images (`cur_nimg`) as decimal digits; it orders the checkpoints and
    `--keep-every` reads kimg from it. Call on every rank: rank 0 writes (the other ranks' `state` is not used),
    then all ranks learn the outcome together, so a failed write raises CheckpointWriteError on every rank
    instead of leaving the others waiting. A failure leaves no partial folder and the earlier checkpoints intact.
    """
    tag = str(tag)
    assert tag.isdigit(), f"checkpoint tag must be the image count in decimal digits, got {tag!r}"
    ckpt_dir, nimg = Path(ckpt_dir), int(tag)
    path = ckpt_dir / store.checkpoint_name(nimg)
    failure = None
    if dist.is_main():
        try:
            store.commit(ckpt_dir, nimg, state)
        except OSError as error:
            failure = (
                f"checkpoint {path}: writing failed ({error}); the previous checkpoints in {ckpt_dir} are "
                "intact: free disk space or fix permissions there, then rerun the same command to resume"
            )
        else:
            _retention.apply(ckpt_dir, retention, protect=path.name)
    failure = dist.broadcast_object(failure)
    dist.barrier()
    if failure is not None:
        raise CheckpointWriteError(failure)
    return path


def read(path: Path, check_state: bool = True) -> dict:
    """The state of the checkpoint folder `path`; InvalidCheckpoint (or OSError) when it does not verify against its
    manifest or, with `check_state`, a resume could not load it (`resumable.check`). Resuming and `ganforge
    checkpoint verify` both read through here, so what one accepts the other does. `check_state=False` reads any
    state `save` wrote (integrity only)."""
    manifest, state = store.read_checkpoint(Path(path))
    if check_state:
        resumable.check(state, manifest)
    return state


def load(path: Path, check_state: bool = True) -> dict:
    """Verify and read the checkpoint folder `path`: the saved structure, int dict keys restored, CPU tensors.

    Raises UserError naming the folder and what is wrong with it when it does not verify (see `read`).
    """
    try:
        return read(path, check_state)
    except (InvalidCheckpoint, OSError) as error:
        raise UserError(f"checkpoint {path}: {reason(error)}; pass another checkpoint, or remove it") from None


def load_latest(ckpt_dir: Path, check_state: bool = True) -> dict | None:
    """The state of the newest checkpoint in `ckpt_dir` that verifies; None when there is none (or no folder).

    Each newer one that does not verify is skipped with a CheckpointWarning naming it and saying why.
    """
    found = find_latest(ckpt_dir, check_state)
    return None if found is None else found[1]


def find_latest(ckpt_dir: Path, check_state: bool = True) -> tuple[Path, dict] | None:
    """Like `load_latest`, and also says which folder the state came from (for "resuming from ..." messages)."""
    return _newest(ckpt_dir, lambda path: read(path, check_state))


@dataclass(frozen=True)
class Trained:
    """What a fine-tuning start takes from a checkpoint: its folder, its state, its stored config's fields in today's
    flat layout (they describe its networks: `nets.configured.network_arguments`) and its tensors' SHA-256."""

    path: Path
    state: dict
    fields: dict
    tensors_sha256: str


def read_trained(path: Path) -> Trained:
    """The checkpoint folder `path`, checked as a resume checks it (`read`); InvalidCheckpoint or OSError."""
    manifest, state = store.read_checkpoint(Path(path))
    fields = resumable.check(state, manifest)
    return Trained(Path(path), state, fields, manifest["files"][store.TENSORS]["sha256"])


def load_trained(path: Path) -> Trained:
    """The checkpoint folder `path`, or when it is a run folder its newest checkpoint that verifies (each newer one
    skipped with a CheckpointWarning); UserError naming the folder when there is none."""
    path = Path(path)
    if (path / "checkpoints").is_dir():
        found = _newest(path / "checkpoints", read_trained)
        if found is None:
            raise UserError(f"{path}: no valid checkpoint in {path / 'checkpoints'} (see the warnings above)")
        return found[1]
    try:
        return read_trained(path)
    except (InvalidCheckpoint, OSError) as error:
        raise UserError(f"checkpoint {path}: {reason(error)}; pass another checkpoint, or remove it") from None


def _newest(ckpt_dir: Path, reader):
    """(folder, what `reader` made of it) for the newest checkpoint in `ckpt_dir` that it reads, or None."""
    for path in reversed(list_checkpoints(ckpt_dir)):
        try:
            return path, reader(path)
        except (InvalidCheckpoint, OSError) as error:
            if dist.is_main():
                warnings.warn(f"skipping checkpoint {path}: {reason(error)}", CheckpointWarning, stacklevel=4)
    return None


def reason(error: Exception) -> str:
    """What an error of `read` says about the checkpoint, for a message that names it."""
    if isinstance(error, InvalidCheckpoint):
        return error.reason
    return f"cannot read it ({type(error).__name__}: {getattr(error, 'strerror', None) or 'I/O error'})"
