"""Per-GPU functional and speed checks: matmul against the CPU, TFLOP/s per precision, memory bandwidth.

The timing helpers are device-agnostic (they synchronise only on CUDA), so the arithmetic runs in CPU tests too.
"""

import time
from collections.abc import Callable

import torch

from ganforge.doctor import peaks as pk
from ganforge.doctor import report as r
from ganforge.doctor.gpu import GpuProps, tensor_core_support
from ganforge.numerics import fp32_math

SECTION = "gpu"
# Below this fraction of the datasheet peak a GPU is probably throttled, capped, shared or on a slow link; well-run
# GPUs reach roughly 60-90% in large matmuls and copies.
LOW_FRACTION = 0.35
MATMUL_RTOL = 1e-4  # fp32 (no TF32) against a float64 CPU reference, relative Frobenius error


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def seconds_per_call(fn: Callable[[], object], device: torch.device, min_seconds: float, warmup: int = 2) -> float:
    """Mean wall time of `fn` after `warmup` calls, repeating until at least `min_seconds` have passed."""
    for _ in range(warmup):
        fn()
    _sync(device)
    calls, start = 0, time.perf_counter()
    while True:
        fn()
        calls += 1
        _sync(device)
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds:
            return elapsed / calls


def matmul_error(device: torch.device, n: int = 512) -> float:
    """Relative error of an fp32 matmul on `device` against a float64 CPU matmul of the same inputs."""
    generator = torch.Generator().manual_seed(0)
    a, b = (torch.randn(n, n, generator=generator) for _ in range(2))
    reference = a.double() @ b.double()
    with fp32_math(tf32=False):
        result = (a.to(device) @ b.to(device)).cpu().double()
    return float(torch.linalg.norm(result - reference) / torch.linalg.norm(reference))


def matmul_tflops(device: torch.device, dtype: torch.dtype, tf32: bool, n: int, min_seconds: float) -> float:
    """Achieved TFLOP/s of an n x n x n matmul (2 n^3 flops) in `dtype`."""
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    with fp32_math(tf32):
        seconds = seconds_per_call(lambda: a @ b, device, min_seconds)
    return 2 * n**3 / seconds / 1e12


def copy_bandwidth(device: torch.device, nbytes: int, min_seconds: float) -> float:
    """Achieved GB/s of a device-to-device copy; each copied byte is read once and written once."""
    src = torch.empty(nbytes, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    seconds = seconds_per_call(lambda: dst.copy_(src), device, min_seconds)
    return 2 * nbytes / seconds / 1e9


def throughput_check(cid: str, title: str, achieved: float, peak: float | None, unit: str, source: str | None):
    """ok with the figure, or a warning when it is below LOW_FRACTION of the known peak."""
    if peak is None:
        return r.ok(cid, SECTION, title, f"{achieved:.1f} {unit} (peak unknown for this GPU)", achieved=achieved)
    fraction = achieved / peak
    data = {"achieved": achieved, "peak": peak, "fraction": fraction, "peak_source": source}
    value = f"{achieved:.1f} {unit} of {peak:g} peak ({fraction:.0%})"
    if fraction < LOW_FRACTION:
        return r.warning(
            cid,
            SECTION,
            title,
            value,
            "check `nvidia-smi -q -d PERFORMANCE,POWER` for throttling, a low power cap or other processes",
            **data,
        )
    return r.ok(cid, SECTION, title, value, **data)


def matmul_check(cid: str, title: str, device: torch.device) -> r.Check:
    error = matmul_error(device)
    if error > MATMUL_RTOL:
        return r.failure(
            cid,
            SECTION,
            title,
            f"relative error {error:.1e} against the CPU (limit {MATMUL_RTOL:g})",
            "the GPU computes wrong results: reset it (`nvidia-smi -r`) or take it out of service",
            relative_error=error,
        )
    return r.ok(cid, SECTION, title, f"matches the CPU (relative error {error:.1e})", relative_error=error)


_PRECISIONS = {"fp32": (torch.float32, False), "tf32": (torch.float32, True)}
_PRECISIONS.update({"bf16": (torch.bfloat16, False), "fp16": (torch.float16, False)})


_FIX = "run `nvidia-smi` and retry; a kernel that fails here will fail in training too"


def gpu_benchmarks(props: GpuProps, quick: bool) -> list[r.Check]:
    """Matmul correctness, TFLOP/s in each precision the GPU has units for, and copy bandwidth."""
    device = torch.device("cuda", props.index)
    peak = pk.lookup(props.name)
    cid, title = f"gpu.{props.index}.matmul", f"GPU {props.index} matmul vs CPU"
    checks = r.guarded(cid, SECTION, title, _FIX, lambda: [matmul_check(cid, title, device)])
    for name in _PRECISIONS:
        checks += _matmul_speed(props, device, name, peak, quick)
    return checks + _bandwidth(props, device, peak, quick)


def _matmul_speed(props: GpuProps, device: torch.device, name: str, peak: pk.Peak | None, quick: bool):
    cid, title = f"gpu.{props.index}.tflops_{name}", f"GPU {props.index} {name} matmul"
    if name != "fp32" and not tensor_core_support(props.major, props.minor)[name]:
        return [r.skipped(cid, SECTION, title, f"no {name} tensor cores on {props.sm}")]
    dtype, tf32 = _PRECISIONS[name]
    n, min_seconds = (4096, 0.1) if quick else (8192, 0.5)
    peak_value, source = (getattr(peak, name), peak.source) if peak else (None, None)

    def measure() -> list[r.Check]:
        achieved = matmul_tflops(device, dtype, tf32, n, min_seconds)
        return [throughput_check(cid, title, achieved, peak_value, "TFLOP/s", source)]

    return r.guarded(cid, SECTION, title, _FIX, measure)


def _bandwidth(props: GpuProps, device: torch.device, peak: pk.Peak | None, quick: bool) -> list[r.Check]:
    cid, title = f"gpu.{props.index}.bandwidth", f"GPU {props.index} memory bandwidth"
    peak_value, source = (peak.bandwidth_gbs, peak.source) if peak else (None, None)

    def measure() -> list[r.Check]:
        free, _ = torch.cuda.mem_get_info(device)
        nbytes = max(1, min(256 if quick else 1024, free // 4 // 2**20)) * 2**20  # two buffers, at most half of free
        achieved = copy_bandwidth(device, nbytes, 0.1 if quick else 0.5)
        return [throughput_check(cid, title, achieved, peak_value, "GB/s", source)]

    return r.guarded(cid, SECTION, title, _FIX, measure)
