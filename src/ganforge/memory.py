"""Memory a command will hold, checked before it is asked for: what is available on the host and on a CUDA device,
and one refusal that names, for each memory too small, the largest need in it with its figure and what to do.

`generate`, `export` and `train` (self-attention's map) state their needs as `Need`s; `doctor` and `bench` read
/proc/meminfo with `parse_meminfo`.
"""

import dataclasses
import resource
from pathlib import Path

import torch

from ganforge.errors import UserError

GIB = 2**30


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


def parse_meminfo(text: str) -> dict[str, int]:
    """/proc/meminfo as bytes per key ('MemTotal:  16318480 kB' -> {'MemTotal': 16710123520})."""
    values = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        fields = rest.split()
        if fields and fields[0].isdigit():
            values[key] = int(fields[0]) * (1024 if fields[1:] == ["kB"] else 1)
    return values


def available_host_bytes(meminfo: Path = Path("/proc/meminfo"), status: Path = Path("/proc/self/status")) -> int | None:
    """Memory this process can still allocate: the system's MemAvailable, and under an address-space limit
    (`ulimit -v`) no more than what is left of it. None where neither can be read."""
    limits = []
    if meminfo.is_file():
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
