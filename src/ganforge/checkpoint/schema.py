"""Checks of untrusted checkpoint values against what the writer stores: each refuses with the entry's path and a
bounded description of what was found (never the value itself), as `Refused`, which `resumable.check` turns into
InvalidCheckpoint."""

import math

import torch

from ganforge.checkpoint.serialize import describe
from ganforge.checkpoint.store import STATE, TENSORS


class Refused(Exception):
    """An entry of a checkpoint's state that a resume could not use: `<file>: <entry>: <problem>`."""

    def __init__(self, file: str, where: str, problem: str):
        super().__init__(f"{file}: {where}: {problem}")


def refuse(where: str, problem: str, file: str = STATE):
    raise Refused(file, where, problem)


def entries(value, where: str, keys, optional=()) -> dict:
    """`value` as a dict holding every one of `keys`, and nothing but `keys` and `optional`."""
    if not isinstance(value, dict):
        refuse(where, f"must be an object, not {describe(value)}")
    missing = [key for key in keys if key not in value]
    if missing:
        refuse(where, f"has no {describe(missing[0])} (a checkpoint of this ganforge holds it)")
    unknown = [key for key in value if key not in keys and key not in optional]
    if unknown:
        refuse(where, f"holds {describe(unknown[0])}, which this ganforge does not know (written by another version?)")
    return value


def whole(value, where: str, low: int, high: int) -> int:
    """An int (not a bool, not a float) from `low` to `high`."""
    if type(value) is not int or not low <= value <= high:
        refuse(where, f"must be a whole number from {low} to {high}, not {describe(value)}")
    return value


def is_finite_number(value) -> bool:
    """A JSON number that is finite as a float (an int too large for a float is not)."""
    if type(value) is int:
        return abs(value) < 2**63
    return type(value) is float and math.isfinite(value)


def number(value, where: str, low: float = -math.inf, high: float = math.inf) -> float:
    """A finite int or float from `low` to `high`, as a float."""
    if not (is_finite_number(value) and low <= value <= high):
        refuse(where, f"must be a finite number{_range(low, high)}, not {describe(value)}")
    return float(value)


def tensor(value, where: str, dtype: torch.dtype, shape: tuple, finite: bool = True) -> torch.Tensor:
    """A tensor of exactly `dtype` and `shape`; with `finite`, no NaN or infinity in it."""
    if not isinstance(value, torch.Tensor) or value.dtype != dtype or tuple(value.shape) != tuple(shape):
        expected = f"a {str(dtype).removeprefix('torch.')} tensor of shape {list(shape)}"
        refuse(where, f"must be {expected}, not {describe(value)}", TENSORS)
    if finite and value.is_floating_point() and not bool(torch.isfinite(value).all()):
        refuse(where, "holds NaN or infinite values", TENSORS)
    return value


def scalar(value, where: str, low: float = -math.inf, high: float = math.inf, nan: bool = False) -> float:
    """A float32 0-d tensor (as the loop stores running values) from `low` to `high`; NaN only where allowed."""
    found = float(tensor(value, where, torch.float32, (), finite=not nan))
    if not (math.isnan(found) or low <= found <= high):
        refuse(where, f"must be{_range(low, high)}, not {found:g}", TENSORS)
    return found


def _range(low: float, high: float) -> str:
    if math.isinf(high):
        return "" if math.isinf(low) else f" >= {low:g}"
    return f" from {low:g} to {high:g}"
