"""What differs between two checkpoints, two snapshots, or a snapshot and a checkpoint: `compare` (the package's
docstring says how each pair is compared)."""

import dataclasses
from pathlib import Path

from ganforge.checkpoint.inspect import Difference, diff, newest_state
from ganforge.errors import UserError
from ganforge.snapshot import DISCRIMINATOR_FORMAT, FORMAT, read_weights_file

EXPECTED = "two checkpoints (checkpoint folders or runs), two snapshots (.safetensors), or one of each"
# The network of a checkpoint's state that a weights file of each format holds.
NETWORK_OF_FORMAT = {FORMAT: "G_ema", DISCRIMINATOR_FORMAT: "D"}
NOUN_OF_FORMAT = {FORMAT: "snapshot", DISCRIMINATOR_FORMAT: "discriminator file"}


@dataclasses.dataclass(frozen=True)
class Comparison:
    """What was compared and how it differs. `first` and `second` are the checkpoint folders (a run's newest) or the
    files read; `scope` says what of them was compared when it is not all of it."""

    first: Path
    second: Path
    scope: str | None
    differences: list[Difference]


@dataclasses.dataclass(frozen=True)
class _Read:
    path: Path
    contents: dict
    format: str | None  # a weights file's format tag; None for a checkpoint


def compare(first: Path, second: Path) -> Comparison:
    """Every difference between `first` and `second` (see the module's docstring); UserError when either cannot be
    read, or for a snapshot against a discriminator file."""
    a, b = _read(Path(first)), _read(Path(second))
    if (a.format is None) == (b.format is None):
        if a.format != b.format:
            raise UserError(
                f"{a.path} is a {NOUN_OF_FORMAT[a.format]} and {b.path} a {NOUN_OF_FORMAT[b.format]}: they hold "
                f"different networks; compare {EXPECTED}"
            )
        return Comparison(a.path, b.path, None, diff(a.contents, b.contents))
    weights, checkpoint = (a, b) if a.format is not None else (b, a)
    network = NETWORK_OF_FORMAT[weights.format]
    scope = f"the tensors of {weights.path} with {network} of checkpoint {checkpoint.path}"
    a_net, b_net = ({network: side.contents["tensors" if side.format else network]} for side in (a, b))
    return Comparison(a.path, b.path, scope, diff(a_net, b_net))


def _read(path: Path) -> _Read:
    if path.is_file():
        contents = read_weights_file(path)
        return _Read(path, contents, contents["format"])
    if not path.exists():
        raise UserError(f"{path}: no such file or folder; pass {EXPECTED}")
    folder, state = newest_state(path)
    return _Read(folder, state, None)
