"""Latents for `ganforge generate`: z from a seed, class labels, interpolation paths, style-mixing ws.

z for seed s is `numpy.random.RandomState(s).randn(z_dim)`, the convention of NVlabs' generate.py, so a seed names
the same latent there and here.
"""

import numpy as np
import torch


def z_from_seeds(seeds, z_dim: int) -> torch.Tensor:
    """[len(seeds), z_dim] float32: one standard-normal z per seed."""
    return torch.from_numpy(np.stack([np.random.RandomState(s).randn(z_dim) for s in seeds])).float()


def labels(class_index: int | None, c_dim: int, n: int) -> torch.Tensor:
    """[n, c_dim] one-hot rows of `class_index` ([n, 0] for an unconditional network)."""
    c = torch.zeros([n, c_dim])
    if class_index is not None:
        c[:, class_index] = 1
    return c


def slerp(a: torch.Tensor, b: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """Spherical interpolation of rows a -> b at fractions t [T] (Shoemake 1985): z stays at the Gaussian's typical
    radius, where a straight line between two samples would pass through unlikely, low-norm latents."""
    a_unit, b_unit = a / a.norm(), b / b.norm()
    omega = torch.arccos((a_unit * b_unit).sum().clamp(-1, 1))
    if omega < 1e-6:  # (nearly) parallel: the spherical path is the straight one
        return torch.lerp(a, b, t[:, None])
    t = t[:, None]
    return (torch.sin((1 - t) * omega) * a + torch.sin(t * omega) * b) / torch.sin(omega)


def loop_path(keys: torch.Tensor, frames_per_key: int, spherical: bool) -> torch.Tensor:
    """A closed path through the rows of `keys` [K, ...]: frames_per_key frames from each key towards the next, the
    last key leading back to the first, so the sequence loops. -> [K * frames_per_key, ...]."""
    t = torch.arange(frames_per_key, dtype=torch.float32) / frames_per_key
    segments = []
    for i in range(len(keys)):
        a, b = keys[i], keys[(i + 1) % len(keys)]
        if spherical:
            segments.append(slerp(a.flatten(), b.flatten(), t).reshape(-1, *a.shape))
        else:
            segments.append(torch.lerp(a, b, t.reshape(-1, *[1] * a.ndim)))
    return torch.cat(segments)


def mix_styles(row_ws: torch.Tensor, col_ws: torch.Tensor, layers) -> torch.Tensor:
    """The style-mixing table (StyleGAN Sec. 3.1, Fig. 3): cell (r, c) takes row r's ws with the ws of `layers` taken
    from column c. row_ws [R, num_ws, w_dim], col_ws [C, num_ws, w_dim] -> [R * C, num_ws, w_dim], row-major."""
    cells = row_ws.unsqueeze(1).repeat(1, len(col_ws), 1, 1)  # [R, C, num_ws, w_dim]
    layers = list(layers)
    cells[:, :, layers] = col_ws[:, layers].unsqueeze(0)
    return cells.flatten(0, 1)
