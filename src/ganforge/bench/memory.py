"""Memory of a training step: an estimate that works on any device, what counts as out of memory, and cleanup.

On CUDA the allocator's peak is measured; the CPU has no such counter for one step (the process's peak RSS only
grows), so there the estimate stands in: the training state (weights, gradients and Adam's two moments of G and D,
the EMA copy of G) plus the activations autograd saves for the backward pass of the largest phase.
"""

import gc
from pathlib import Path

import torch

from ganforge.memory import parse_meminfo

GIB = 2**30


class OutOfMemory(Exception):
    """A batch whose peak memory exceeds the memory cap (a real CUDA out-of-memory error is handled alike)."""


class SavedActivations(torch.autograd.graph.saved_tensors_hooks):
    """Bytes of the distinct storages autograd saves for backward while active (a context manager).

    Views of one tensor share a storage and are counted once; the count is an upper bound of what is alive at one
    time, since backward frees some of them before others are saved (the double backward of R1 and path length)."""

    def __init__(self):
        self._storages: dict[int, int] = {}
        super().__init__(self._pack, lambda tensor: tensor)

    def _pack(self, tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        self._storages[storage.data_ptr()] = storage.nbytes()
        return tensor

    @property
    def nbytes(self) -> int:
        return sum(self._storages.values())

    def __enter__(self):
        super().__enter__()
        return self


def _bytes(tensors) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


def training_state_bytes(G: torch.nn.Module, D: torch.nn.Module, G_ema: torch.nn.Module) -> int:
    """G and D: weights, gradients and Adam's first and second moments (4 copies); G_ema: weights and buffers;
    plus the buffers of G and D."""
    trained = 4 * (_bytes(G.parameters()) + _bytes(D.parameters()))
    return trained + _bytes(G_ema.parameters()) + sum(_bytes(m.buffers()) for m in (G, D, G_ema))


def available_gb(meminfo: Path = Path("/proc/meminfo")) -> float | None:
    """System memory available to new allocations (Linux's MemAvailable), or None where it cannot be read."""
    if not meminfo.is_file():
        return None
    info = parse_meminfo(meminfo.read_text())
    return info["MemAvailable"] / GIB if "MemAvailable" in info else None


def release(device: torch.device) -> None:
    """Return the memory of a dropped (or failed) measurement: collect cycles, and empty CUDA's cache so the next
    batch size starts from a clean allocator."""
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
