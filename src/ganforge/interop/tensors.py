"""Tensors under the official StyleGAN2 names -> a ganforge network; shared by the NVlabs and rosinality readers."""

from pathlib import Path

import torch

from ganforge.errors import UserError
from ganforge.nets.layers import fir_kernel
from ganforge.snapshot import build_network as _build_checked
from ganforge.snapshot import construct, sized_network

__all__ = ["build_network", "check_fir", "construct", "drop_resample_filters", "fit_singleton_dims", "network_shapes"]

RESAMPLE_FILTER = ".resample_filter"


def check_fir(where, name: str, value, gain: float = 1.0) -> None:
    """UserError unless `value` is the normalized [1, 3, 3, 1] kernel times `gain`, the only filter ganforge has."""
    plain = isinstance(value, torch.Tensor) and value.layout == torch.strided and value.is_floating_point()
    if not plain or value.shape != (4, 4) or not torch.equal(value.to(torch.float32), fir_kernel() * gain):
        raise UserError(f"{where}: {name} is not the [1, 3, 3, 1] FIR filter; only StyleGAN2's default is supported")


def drop_resample_filters(where, tensors: dict) -> dict:
    """`tensors` without the constant `*.resample_filter` buffers, after checking that each is the kernel that
    ganforge recomputes (docs/official-tensor-mapping.md)."""
    for name, value in tensors.items():
        if name.endswith(RESAMPLE_FILTER):
            check_fir(where, name, value)
    return {name: value for name, value in tensors.items() if not name.endswith(RESAMPLE_FILTER)}


def fit_singleton_dims(tensors: dict, shapes: dict) -> dict:
    """Reshape each tensor to its expected shape where the two differ only in size-1 dimensions ([1, O, I, 3, 3] ->
    [O, I, 3, 3], [1] -> []); anything else is left for the shape check to report."""
    fitted = {}
    for name, value in tensors.items():
        shape = shapes.get(name)
        same = shape is not None and [d for d in value.shape if d != 1] == [d for d in shape if d != 1]
        fitted[name] = value.reshape(shape) if same else value
    return fitted


def build_network(path: Path, network: type, arch: dict, tensors: dict) -> torch.nn.Module:
    """`network(**arch)` on the CPU in eval mode holding `tensors` (float32); the architecture is checked against
    the limits and against the size of `path` before anything is allocated (snapshot.build_network); UserError
    listing every mismatch."""
    return _build_checked(path, network, arch, tensors, "cpu", Path(path).stat().st_size)


def network_shapes(path: Path, network: type, arch: dict) -> dict[str, tuple]:
    """The shape of every tensor of `network(**arch)`, once the architecture is within the limits and no larger
    than the file at `path` can hold (nothing is allocated)."""
    shapes_only = sized_network(path, network, arch, Path(path).stat().st_size)
    return {name: tuple(value.shape) for name, value in shapes_only.state_dict().items()}
