"""The device's peak FLOP/s for a precision, to state achieved FLOP/s as a share of what the device can do.

GPUs: the dense tensor-core (or fp32) figure of `doctor`'s datasheet table. CPUs have no such table; there the peak
is a measured large matmul in the precision's dtype, the practical best this CPU reaches with torch's threads: the
best of several short timings, since other processes on the machine can only slow a timing down.
"""

from dataclasses import dataclass

import torch

from ganforge.doctor import peaks
from ganforge.doctor.benchmark import matmul_tflops

CPU_MATMUL_SIZE = 1024
CPU_TIMINGS = 5


@dataclass(frozen=True)
class DevicePeak:
    """Peak TFLOP/s (None when unknown) and where the figure comes from."""

    tflops: float | None
    source: str


def device_peak(device: torch.device, precision: str, min_seconds: float = 0.1) -> DevicePeak:
    if device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        peak = peaks.lookup(name)
        if peak is None:
            return DevicePeak(None, f"no datasheet figure for {name}")
        return DevicePeak(getattr(peak, precision), f"{peak.source}: {peak.model}, dense {precision}")
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    n = CPU_MATMUL_SIZE
    best = max(matmul_tflops(device, dtype, tf32=False, n=n, min_seconds=min_seconds) for _ in range(CPU_TIMINGS))
    threads = torch.get_num_threads()
    return DevicePeak(best, f"best of {CPU_TIMINGS} timed {n}x{n} {precision} matmuls on this CPU, {threads} threads")
