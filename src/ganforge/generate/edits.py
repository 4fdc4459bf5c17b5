"""Moving ws directly, as NVlabs' visualizer lets one drag a latent: every image's ws (after mapping and truncation,
or a projected row's) move by --edit-amount along one direction of W, on the --edit-layers ws (all by default).

The direction is one dimension of W (a unit vector), a random unit vector drawn from a seed (numpy's RandomState,
as z is drawn: the same seed names the same direction everywhere), or the ws of a one-row projected_w.npz taken as
they are, one direction per w (so that the difference of two projections moves from one to the other at 1).
"""

import numpy as np
import torch

from ganforge.errors import UserError
from ganforge.projected import read_projected_w


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
