"""What `ganforge generate` will hold in memory for what was asked, estimated before any image is made.

A typo costs hours or the machine: `--grid 1000x1000` at 256 px is one 256000x256000 image, `--interp` in WebP holds
every frame, `--batch 4096` at 1024 px asks the synthesis network for hundreds of GB of activations. Each of these is
computed from the options and the network's image size, plus one measured figure: the peak bytes of tensor storage
that synthesizing one image takes (`synthesis_peak_bytes`, measured on a batch of one with the very call that makes
the images). What does not fit in the memory available now is refused with the figure and what to do.
"""

import dataclasses
import resource
import weakref
from collections.abc import Callable
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._pytree import tree_leaves

from ganforge.errors import UserError

GIB = 2**30
FRAME_COPIES = 2  # Pillow's animation writers hold every frame, plus the encoder's working copy


@dataclasses.dataclass(frozen=True)
class Need:
    """One thing held in memory: what asks for it (a sentence naming the flag), its bytes, where (host or device),
    and what to do when it does not fit."""

    what: str
    nbytes: int
    on_device: bool
    advice: str


def size_text(nbytes: float) -> str:
    """183 GiB, 1.5 GiB, 300 MiB."""
    for unit, scale in (("TiB", 2**40), ("GiB", GIB), ("MiB", 2**20)):
        if nbytes >= scale:
            value = nbytes / scale
            return f"{value:.0f} {unit}" if value >= 100 else f"{value:.1f} {unit}"
    return f"{nbytes / 1024:.1f} KiB"


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


def available_host_bytes(meminfo: Path = Path("/proc/meminfo"), status: Path = Path("/proc/self/status")) -> int | None:
    """Memory this process can still allocate: the system's MemAvailable, and under an address-space limit
    (`ulimit -v`) no more than what is left of it. None where neither can be read."""
    limits = []
    if meminfo.is_file():
        from ganforge.doctor.system import parse_meminfo

        info = parse_meminfo(meminfo.read_text())
        if "MemAvailable" in info:
            limits.append(info["MemAvailable"])
    soft, _hard = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY and status.is_file():
        used = next(
            (int(line.split()[1]) * 1024 for line in status.read_text().splitlines() if line.startswith("VmSize:")), 0
        )
        limits.append(max(soft - used, 0))
    return min(limits) if limits else None


def available_device_bytes(device: torch.device) -> int | None:
    """Free memory of a CUDA device, counting what PyTorch's allocator holds but does not use; None for the CPU."""
    if device.type != "cuda":
        return None
    free, _total = torch.cuda.mem_get_info(device)
    return free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)


def check(needs: list[Need], host: int | None, device: int | None) -> None:
    """UserError naming, for each memory too small for the sum of what it must hold, the largest need in it and its
    advice. `host`, `device`: bytes available (None: unknown, not checked; a device of None means the CPU, where
    host and device needs share the host's memory)."""
    pools = [(True, device, "GPU memory"), (False, host, "memory")] if device is not None else [(None, host, "memory")]
    problems = []
    for on_device, available, where in pools:
        mine = [n for n in needs if on_device is None or n.on_device == on_device]
        total = sum(n.nbytes for n in mine)
        if available is None or total <= available:
            continue
        biggest = max(mine, key=lambda n: n.nbytes)
        in_all = f" ({size_text(total)} in all)" if size_text(total) != size_text(biggest.nbytes) else ""
        problems.append(
            f"{biggest.what} needs {size_text(biggest.nbytes)}{in_all}; {size_text(available)} of "
            f"{where} is available; {biggest.advice}"
        )
    if problems:
        raise UserError(*problems)
