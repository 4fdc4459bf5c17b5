"""Memory of a training step: what counts as out of memory, cleanup, and a CPU step's measured peak.

The estimate that works on any device is a trace of the step on fake tensors (ganforge.train.step_memory). On CUDA
the allocator's peak is measured as well; a CPU's allocator keeps no peak, and the process's peak RSS only grows, so
`measured_peak_bytes` reads what the allocator reports to torch's profiler, allocation by allocation: what the
trace predicts, measured (tests/train/test_step_memory.py, benchmarks/step_memory.py).
"""

import gc
from pathlib import Path

import torch

from ganforge import dist
from ganforge.config import Config
from ganforge.memory import parse_meminfo
from ganforge.train.build import build_networks
from ganforge.train.step_memory import reference_config, run_step

GIB = 2**30


class OutOfMemory(Exception):
    """A batch whose peak memory exceeds the memory cap (a real CUDA out-of-memory error is handled alike)."""


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


def measured_peak_bytes(cfg: Config, device: torch.device) -> int:
    """The most bytes allocated at once, from building the networks to the end of one real step of `cfg` on `device`
    (the step `step_peak_bytes` traces, with the same reference ops), over what was allocated before: on CUDA the
    allocator's peak, on a CPU the allocator's running total as it reports it to torch's profiler with every
    allocation and free. The RNG is left as it was."""
    cfg = reference_config(cfg)
    gc.collect()
    with torch.random.fork_rng(), dist.alone():
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            before = torch.cuda.memory_allocated(device)
            torch.cuda.reset_peak_memory_stats(device)
            _real_step(cfg, device)
            torch.cuda.synchronize(device)
            return torch.cuda.max_memory_allocated(device) - before
        return _cpu_peak(cfg, device)


def _real_step(cfg: Config, device: torch.device) -> None:
    G, D = build_networks(cfg, device)
    G.use_cpu_kernels(False)  # the reference ops, as the trace runs them (not the CPU's Winograd tiles)
    D.use_cpu_kernels(False)
    run_step(cfg, device, (G, D))


def _cpu_peak(cfg: Config, device: torch.device) -> int:
    from torch._C._profiler import _EventType
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as run:
        _real_step(cfg, device)
    events = sorted(
        (node.start_time_ns, node.extra_fields.alloc_size, node.extra_fields.total_allocated)
        for node in _walk(run.profiler.kineto_results.experimental_event_tree())
        if node.tag == _EventType.Allocation
    )
    before = events[0][2] - events[0][1]
    return max(total for _, _, total in events) - before


def _walk(nodes):
    for node in nodes:
        yield node
        yield from _walk(node.children)
