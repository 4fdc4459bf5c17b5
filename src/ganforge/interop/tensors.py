"""Tensors under the official StyleGAN2 names -> a ganforge network; shared by the NVlabs and rosinality readers."""

import torch

from ganforge.errors import UserError
from ganforge.nets.layers import fir_kernel
from ganforge.snapshot import check_tensors

RESAMPLE_FILTER = ".resample_filter"


def check_fir(where, name: str, value: torch.Tensor, gain: float = 1.0) -> None:
    """UserError unless `value` is the normalized [1, 3, 3, 1] kernel times `gain`, the only filter ganforge has."""
    if not torch.equal(value.to(torch.float32), fir_kernel() * gain):
        raise UserError(f"{where}: {name} is not the [1, 3, 3, 1] FIR filter; only StyleGAN2's default is supported")


def drop_resample_filters(where, tensors: dict) -> dict:
    """`tensors` without the constant `*.resample_filter` buffers, after checking that each is the kernel that
    ganforge recomputes (docs/official-tensor-mapping.md)."""
    for name, value in tensors.items():
        if name.endswith(RESAMPLE_FILTER):
            check_fir(where, name, value)
    return {name: value for name, value in tensors.items() if not name.endswith(RESAMPLE_FILTER)}


def construct(where, network: type, arch: dict, device=None) -> torch.nn.Module:
    """`network(**arch)` on `device` ("meta" for shapes only); an invalid architecture is a UserError naming `where`."""
    try:
        with torch.device(device or "cpu"):
            return network(**arch)
    except UserError as err:
        raise UserError(*(f"{where}: unsupported architecture, {p}" for p in err.problems)) from None


def fit_singleton_dims(tensors: dict, shapes: dict) -> dict:
    """Reshape each tensor to its expected shape where the two differ only in size-1 dimensions ([1, O, I, 3, 3] ->
    [O, I, 3, 3], [1] -> []); anything else is left for the shape check to report."""
    fitted = {}
    for name, value in tensors.items():
        shape = shapes.get(name)
        same = shape is not None and [d for d in value.shape if d != 1] == [d for d in shape if d != 1]
        fitted[name] = value.reshape(shape) if same else value
    return fitted


def build_network(where, network: type, arch: dict, tensors: dict) -> torch.nn.Module:
    """`network(**arch)` in eval mode holding `tensors` (float32); UserError listing every mismatch at once."""
    net = construct(where, network, arch)
    check_tensors(where, net, tensors)
    net.load_state_dict({name: value.to(torch.float32) for name, value in tensors.items()})
    return net.eval()
