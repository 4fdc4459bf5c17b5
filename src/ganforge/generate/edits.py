"""Moving ws directly, as NVlabs' visualizer lets one drag a latent: every image's ws (after mapping and truncation,
or a projected row's) move by --edit-amount along one direction of W, on the --edit-layers ws (all by default).

The direction is one dimension of W (a unit vector), a random unit vector drawn from a seed (numpy's RandomState,
as z is drawn: the same seed names the same direction everywhere), or the ws of a one-row projected_w.npz taken as
they are, one direction per w (so that the difference of two projections moves from one to the other at 1).
"""

import numpy as np
import torch

from ganforge.errors import UserError, first_few
from ganforge.projected import read_projected_w

DIRECTION_FLAGS = (("--edit-dim", "edit_dim"), ("--edit-seed", "edit_seed"), ("--edit-file", "edit_file"))


def edit_flag_problems(fields: dict, typed: dict, modes: list[str]) -> list[str]:
    """Flags of an edit that do not go together: one direction, with an amount, for single images or a grid."""
    directions = [flag for flag, name in DIRECTION_FLAGS if fields.get(name) is not None]
    amount = fields.get("edit_amount") is not None
    if not directions:
        given = [flag for flag, value in (("--edit-amount", amount), ("--edit-layers", typed["edit_layers"])) if value]
        return [f"{' and '.join(given)}: only used with --edit-dim, --edit-seed or --edit-file"] if given else []
    problems = []
    if len(directions) > 1:
        problems.append(f"{' and '.join(directions)}: choose one direction to move the ws along")
    if not amount:
        problems.append(f"{directions[0]}: give --edit-amount too, how far to move along it (e.g. 2)")
    moving = [mode for mode in modes if mode in ("--interp", "--style-mix")]
    if moving:
        problems.append(f"{directions[0]} with {moving[0]}: edits move the ws of single images and grids only")
    return problems


def edit_network_problems(o, G) -> list[str]:
    """What of the edit the network `G` cannot honour: no W space, a dimension or a w it does not have."""
    if o.edit_amount is None:
        return []
    if not G.has_w_space:
        return [f"--edit-amount: {o.network} is an R3GAN generator, which has no W space to move in"]
    problems = []
    if o.edit_dim is not None and o.edit_dim >= G.w_dim:
        problems.append(f"--edit-dim {o.edit_dim}: the ws of {o.network} have {G.w_dim} dimensions, 0 to {G.w_dim - 1}")
    beyond = [layer for layer in o.edit_layers or () if layer >= G.num_ws]
    if beyond:
        problems.append(f"--edit-layers: {o.network} has ws 0 to {G.num_ws - 1}, not {first_few(beyond)}")
    return problems


def edit_offset(o, G) -> torch.Tensor | None:
    """What the edit adds to every image's ws, float32 [num_ws, w_dim]; None without an edit. Reads --edit-file."""
    if o.edit_amount is None:
        return None
    direction = torch.from_numpy(_direction(o, G.num_ws, G.w_dim))  # [w_dim] for every w, or [num_ws, w_dim]
    layers = list(o.edit_layers) if o.edit_layers else list(range(G.num_ws))
    offset = torch.zeros([G.num_ws, G.w_dim], dtype=torch.float32)
    offset[layers] = (o.edit_amount * direction.expand(G.num_ws, -1))[layers]
    return offset


def _direction(o, num_ws: int, w_dim: int) -> np.ndarray:
    if o.edit_dim is not None:
        return np.eye(w_dim, dtype=np.float32)[o.edit_dim]
    if o.edit_seed is not None:
        return unit_direction(o.edit_seed, w_dim)
    rows = read_projected_w(o.edit_file, num_ws, w_dim)
    if len(rows) != 1:
        raise UserError(f"--edit-file {o.edit_file}: holds {len(rows)} rows; a direction is one row of ws")
    return rows[0]


def unit_direction(seed: int, w_dim: int) -> np.ndarray:
    """float32 [w_dim] of length 1: a standard-normal draw from `seed`, normalised (uniform over directions)."""
    draw = np.random.RandomState(seed).randn(w_dim)
    return (draw / np.linalg.norm(draw)).astype(np.float32)
