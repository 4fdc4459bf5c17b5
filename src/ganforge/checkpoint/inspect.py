"""`ganforge checkpoint verify` and `diff`: is a checkpoint intact, and what differs between two of them.

Both read checkpoints through `checkpoint.read`, as resuming does (manifest, size and SHA-256 of every file,
safetensors and JSON only, then every entry a resume restores checked by `resumable.check`), so what `verify` accepts
is exactly what `--resume` accepts.
"""

import dataclasses
import math
import os
from pathlib import Path

import torch

from ganforge.checkpoint import read, reason, store
from ganforge.checkpoint.store import InvalidCheckpoint
from ganforge.errors import UserError

EXPECTED = f"a checkpoint folder (one with a {store.MANIFEST}), a run's checkpoints/ folder or a run folder"


@dataclasses.dataclass(frozen=True)
class Verdict:
    """One checkpoint folder and why it cannot be used (`problem` None: it verifies and loads)."""

    path: Path
    nimg: int | None
    problem: str | None


def checkpoint_folders(path: Path) -> list[Path]:
    """The checkpoint folders that `path` names: itself (a `ckpt-*` folder, or any folder holding a checkpoint's
    manifest, such as a copy under another name), or those in a `checkpoints/` folder or run folder.

    Raises UserError when `path` is none of these."""
    path = Path(path)
    if not path.exists():
        raise UserError(f"{path}: no such file or folder; pass {EXPECTED}")
    if path.name.startswith(store.PREFIX) or os.path.lexists(path / store.MANIFEST):
        return [path]
    for folder in (path, path / "checkpoints"):
        found = store.list_checkpoints(folder)
        if found:
            return found
    if not path.is_dir():
        raise UserError(f"{path}: a file, not a checkpoint folder; pass {EXPECTED}")
    raise UserError(
        f"{path}: neither a checkpoint (no {store.MANIFEST}) nor a folder of checkpoints (no {store.PREFIX}* folders "
        f"in it or in its checkpoints/); pass {EXPECTED}"
    )


def verify(path: Path) -> list[Verdict]:
    """Verify every checkpoint folder `path` names, oldest first (see `checkpoint_folders`), with the very checks a
    resume makes (`checkpoint.read`)."""
    return [_verdict(folder)[0] for folder in checkpoint_folders(path)]


def _verdict(folder: Path) -> tuple[Verdict, dict | None]:
    try:
        state = read(folder)
    except (InvalidCheckpoint, OSError) as error:
        return Verdict(folder, None, reason(error)), None
    return Verdict(folder, state["loop"]["cur_nimg"], None), state


def newest_state(path: Path) -> tuple[Path, dict]:
    """(folder, state) of the newest checkpoint `path` names that verifies; UserError naming each one that does not."""
    refused = []
    for folder in reversed(checkpoint_folders(path)):
        verdict, state = _verdict(folder)
        if state is not None:
            return folder, state
        refused.append(verdict)
    raise UserError(*(f"checkpoint {v.path}: {v.problem}" for v in reversed(refused)))


@dataclasses.dataclass(frozen=True)
class Difference:
    """One entry of the state that differs: `where` is its path (`G/mapping.fc0.weight`, `loop/cur_nimg`)."""

    where: str
    description: str


def diff(a, b, where: str = "") -> list[Difference]:
    """Every leaf of two checkpoint states that differs: tensors with their max abs difference, other values as
    `old -> new`, and entries present on one side only. Equal states give []."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in list(a) + [k for k in b if k not in a]:
            child = f"{where}/{key}" if where else str(key)
            if key not in b:
                out.append(Difference(child, "only in the first"))
            elif key not in a:
                out.append(Difference(child, "only in the second"))
            else:
                out += diff(a[key], b[key], child)
        return out
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in diff(x, y, f"{where}/{i}")]
    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        description = _tensor_difference(a, b)
        return [] if description is None else [Difference(where, description)]
    if _same_value(a, b):
        return []
    return [Difference(where, f"{_short(a)} -> {_short(b)}")]


def _tensor_difference(a: torch.Tensor, b: torch.Tensor) -> str | None:
    if a.dtype != b.dtype or a.shape != b.shape:
        return f"{a.dtype}{list(a.shape)} -> {b.dtype}{list(b.shape)}"
    if _bytes(a) == _bytes(b):  # bitwise, so that NaNs in the same places count as equal
        return None
    if a.is_floating_point() or a.is_complex():
        delta = (a.double() - b.double()).abs()
        finite = torch.isfinite(delta)
        worst = delta[finite].max().item() if finite.any() else math.nan
        return f"max abs difference {worst:.6g} ({int((delta != 0).sum())} of {a.numel()} values differ)"
    changed = int((a != b).sum())
    return f"{changed} of {a.numel()} values differ"


def _bytes(tensor: torch.Tensor) -> bytes:
    return tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


def _same_value(a, b) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."
