"""What `ganforge generate` will hold in memory for what was asked, estimated before any image is made.

A typo costs hours or the machine: `--grid 1000x1000` at 256 px is one 256000x256000 image, `--interp` in WebP holds
every frame, `--batch 4096` at 1024 px asks the synthesis network for hundreds of GB of activations. Each of these is
computed from the options and the network's image size, plus one measured figure: the peak bytes of tensor storage
that synthesizing one image takes (`synthesis_peak_bytes`, measured on a batch of one with the very call that makes
the images). What does not fit in the memory available now is refused with the figure and what to do
(`ganforge.memory`).
"""

import weakref
from collections.abc import Callable

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_leaves

FRAME_COPIES = 2  # Pillow's animation writers hold every frame, plus the encoder's working copy


class _StoragePeak(TorchFunctionMode):
    """Peak bytes of the tensor storages created while active and still referenced (the live set).

    The outputs of every torch function called from Python pass through here (a function mode: a dispatch mode would
    also see the insides of composite ops, but its first use imports torch._dynamo, seconds of start-up); each new
    storage is counted once when it appears and subtracted when the last tensor seen using it is collected.
    Storages that existed before (weights, inputs) are not counted."""

    def __init__(self, existing: set[int]):
        super().__init__()
        self.existing, self.live, self.peak = existing, 0, 0
        self._users: dict[int, int] = {}  # storage address -> tensors seen using it and not yet collected

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for tensor in tree_leaves(out):
            if isinstance(tensor, torch.Tensor):
                self._track(tensor)
        return out

    def _track(self, tensor: torch.Tensor) -> None:
        storage = tensor.untyped_storage()
        address, nbytes = storage.data_ptr(), storage.nbytes()
        if address == 0 or address in self.existing:
            return
        if address not in self._users:
            self.live += nbytes
            self.peak = max(self.peak, self.live)
        self._users[address] = self._users.get(address, 0) + 1
        weakref.finalize(tensor, self._release, address, nbytes)

    def _release(self, address: int, nbytes: int) -> None:
        self._users[address] -= 1
        if self._users[address] == 0:
            del self._users[address]
            self.live -= nbytes


@torch.no_grad()
def synthesis_peak_bytes(G: torch.nn.Module, synthesize: Callable[[torch.Tensor], torch.Tensor]) -> int:
    """Peak bytes of the tensors that `synthesize(ws)` creates for one image (ws [1, num_ws, w_dim] on G's device):
    the activations, resampled intermediates and the image. A batch of B takes about B times this."""
    device = next(G.parameters()).device
    ws = G.mapping(torch.zeros([1, G.z_dim], device=device), torch.zeros([1, G.c_dim], device=device))  # a valid w
    existing = {t.untyped_storage().data_ptr() for t in [*G.parameters(), *G.buffers(), ws]}
    mode = _StoragePeak(existing)
    with mode:
        synthesize(ws)
    return mode.peak
