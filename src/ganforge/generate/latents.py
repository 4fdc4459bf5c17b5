"""Latents for `ganforge generate`: z from a seed, interpolation paths, style-mixing ws (label vectors: labels.py).

z for seed s is `numpy.random.RandomState(s).randn(z_dim)`, the convention of NVlabs' generate.py, so a seed names
the same latent there and here.
"""

import numpy as np
import torch


def z_from_seeds(seeds, z_dim: int) -> torch.Tensor:
    """[len(seeds), z_dim] float32: one standard-normal z per seed."""
    return torch.from_numpy(np.stack([np.random.RandomState(s).randn(z_dim) for s in seeds])).float()


def slerp(a: torch.Tensor, b: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """Spherical interpolation of rows a -> b at fractions t [T] (Shoemake 1985): z stays at the Gaussian's typical
    radius, where a straight line between two samples would pass through unlikely, low-norm latents."""
    ca, cb = slerp_coefficients(a, b, t)
    return ca[:, None] * a + cb[:, None] * b


class LoopPath:
    """A closed path through the rows of `keys` [K, ...]: frames_per_key frames from each key towards the next, the
    last key leading back to the first, so the sequence loops. Frames are made on demand (`between`), so a long
    animation never holds its whole path; any split into ranges gives the same frames."""

    def __init__(self, keys: torch.Tensor, frames_per_key: int, spherical: bool):
        self.keys, self.per_key, self.spherical = keys, frames_per_key, spherical
        self.frames = len(keys) * frames_per_key
        self._t = torch.arange(frames_per_key, dtype=torch.float32) / frames_per_key
        self._segment: tuple[int, tuple] | None = None  # (key index, its coefficients), computed once per segment

    def between(self, start: int, stop: int) -> torch.Tensor:
        """Frames start .. stop - 1 -> [stop - start, ...]."""
        parts = []
        for k in range(start // self.per_key, -(-stop // self.per_key)):
            first = max(start, k * self.per_key) - k * self.per_key
            last = min(stop, (k + 1) * self.per_key) - k * self.per_key
            parts.append(self._frames(k, first, last))
        return torch.cat(parts)

    def _frames(self, k: int, first: int, last: int) -> torch.Tensor:
        a, b = self.keys[k], self.keys[(k + 1) % len(self.keys)]
        if not self.spherical:  # a multiply and an add, each exact per element however many frames are made at once
            return a + self._t[first:last].reshape(-1, *[1] * a.ndim) * (b - a)
        if self._segment is None or self._segment[0] != k:
            self._segment = (k, slerp_coefficients(a.flatten(), b.flatten(), self._t))
        ca, cb = self._segment[1]
        return (ca[first:last, None] * a.flatten() + cb[first:last, None] * b.flatten()).reshape(-1, *a.shape)


def slerp_coefficients(a: torch.Tensor, b: torch.Tensor, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(ca, cb) [T] with slerp(a, b, t) = ca a + cb b (computed for all t at once, so frames of the same t are equal
    whichever range they are made in)."""
    a_unit, b_unit = a / a.norm(), b / b.norm()
    omega = torch.arccos((a_unit * b_unit).sum().clamp(-1, 1))
    if omega < 1e-6:  # (nearly) parallel: the spherical path is the straight one
        return 1 - t, t
    return torch.sin((1 - t) * omega) / torch.sin(omega), torch.sin(t * omega) / torch.sin(omega)


def loop_path(keys: torch.Tensor, frames_per_key: int, spherical: bool) -> torch.Tensor:
    """All frames of LoopPath(keys, frames_per_key, spherical) -> [K * frames_per_key, ...]."""
    path = LoopPath(keys, frames_per_key, spherical)
    return path.between(0, path.frames)


def mix_styles(row_ws: torch.Tensor, col_ws: torch.Tensor, layers, cells=None) -> torch.Tensor:
    """The style-mixing table (StyleGAN Sec. 3.1, Fig. 3): cell (r, c) takes row r's ws with the ws of `layers` taken
    from column c. row_ws [R, num_ws, w_dim], col_ws [C, num_ws, w_dim] -> [len(cells), num_ws, w_dim] for the cells
    numbered row-major (r * C + c); all R * C of them by default."""
    cells = torch.arange(len(row_ws) * len(col_ws)) if cells is None else torch.as_tensor(list(cells))
    mixed = row_ws[cells // len(col_ws)].clone()  # [cells, num_ws, w_dim]
    layers = list(layers)
    mixed[:, layers] = col_ws[cells % len(col_ws)][:, layers]
    return mixed
