"""Measurement code: run on the CPU where it is device-agnostic, with the CUDA parts mocked."""

import math
import queue
import time
import types

import pytest
import torch

from ganforge.doctor import benchmark, functional, gpu
from ganforge.doctor import report as r


def test_matmul_error_and_throughput_on_cpu():
    cpu = torch.device("cpu")
    assert benchmark.matmul_error(cpu, n=64) < benchmark.MATMUL_RTOL
    assert benchmark.matmul_tflops(cpu, torch.float32, False, n=64, min_seconds=0.01) > 0
    assert benchmark.copy_bandwidth(cpu, 2**20, min_seconds=0.01) > 0


def test_throughput_verdicts():
    fast = benchmark.throughput_check("gpu.0.tflops_bf16", "t", 700.0, 989.4, "TFLOP/s", "datasheet")
    assert fast.status == r.OK and "71%" in fast.value and fast.data["peak_source"] == "datasheet"
    slow = benchmark.throughput_check("gpu.0.tflops_bf16", "t", 100.0, 989.4, "TFLOP/s", "datasheet")
    assert slow.status == r.WARNING and "nvidia-smi" in slow.fix
    unknown = benchmark.throughput_check("gpu.0.bandwidth", "t", 500.0, None, "GB/s", None)
    assert unknown.status == r.OK and "peak unknown" in unknown.value


def _mock_cuda_measurements(monkeypatch, error=1e-7, tflops=600.0, gbs=3000.0):
    monkeypatch.setattr(benchmark, "matmul_error", lambda device: error)
    monkeypatch.setattr(benchmark, "matmul_tflops", lambda device, dtype, tf32, n, s: tflops * (0.1 if tf32 else 1))
    monkeypatch.setattr(benchmark, "copy_bandwidth", lambda device, nbytes, s: gbs)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device: (70 * 2**30, 80 * 2**30))


def test_gpu_benchmarks_against_peaks_with_mocked_device(monkeypatch):
    _mock_cuda_measurements(monkeypatch)
    h100 = gpu.GpuProps(0, "NVIDIA H100 80GB HBM3", 9, 0, 80 * 2**30, 132, "GPU-x")
    checks = {c.id: c for c in benchmark.gpu_benchmarks(h100, quick=True)}
    assert list(checks) == [
        "gpu.0.matmul",
        "gpu.0.tflops_fp32",
        "gpu.0.tflops_tf32",
        "gpu.0.tflops_bf16",
        "gpu.0.tflops_fp16",
        "gpu.0.bandwidth",
    ]
    assert checks["gpu.0.matmul"].status == r.OK
    assert checks["gpu.0.tflops_bf16"].status == r.OK and checks["gpu.0.tflops_bf16"].data["peak"] == 989.4
    assert checks["gpu.0.tflops_tf32"].status == r.WARNING  # 60 of 494.7: throttled or capped
    assert checks["gpu.0.bandwidth"].data["fraction"] == pytest.approx(3000 / 3350)


def test_gpu_benchmarks_skip_missing_units_and_report_wrong_math(monkeypatch):
    _mock_cuda_measurements(monkeypatch, error=0.3)
    t4 = gpu.GpuProps(1, "Tesla T4", 7, 5, 16 * 2**30, 40, "GPU-y")
    checks = {c.id: c for c in benchmark.gpu_benchmarks(t4, quick=True)}
    assert checks["gpu.1.matmul"].status == r.FAILURE and "relative error" in checks["gpu.1.matmul"].value
    assert checks["gpu.1.tflops_bf16"].status == r.SKIPPED and "sm_75" in checks["gpu.1.tflops_bf16"].value
    assert checks["gpu.1.tflops_tf32"].status == r.SKIPPED
    assert checks["gpu.1.tflops_fp16"].data["peak"] == 65.0


def test_a_crashing_gpu_measurement_is_a_failure_line(monkeypatch):
    _mock_cuda_measurements(monkeypatch)

    def crash(device, nbytes, s):
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setattr(benchmark, "copy_bandwidth", crash)
    props = gpu.GpuProps(0, "NVIDIA L4", 8, 9, 24 * 2**30, 58, "GPU-z")
    bandwidth = benchmark.gpu_benchmarks(props, quick=True)[-1]
    assert bandwidth.id == "gpu.0.bandwidth" and bandwidth.status == r.FAILURE
    assert "illegal memory access" in bandwidth.value


def test_bus_bandwidth_formula():
    # nccl-tests: busbw = algbw * 2(n-1)/n; two ranks move the buffer once each way
    assert functional.bus_bandwidth(10**9, 1.0, 2) == pytest.approx(1.0)
    assert functional.bus_bandwidth(10**9, 0.5, 8) == pytest.approx(2 * 2 * 7 / 8)


def test_tiny_stylegan2_step_on_cpu_in_bf16_leaves_the_global_rng_alone():
    # fp32 on CPU runs in the end-to-end CLI test
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    check = functional.stylegan_check(torch.device("cpu"), "bf16")
    assert torch.equal(torch.rand(3), expected)
    assert check.status == r.OK, check
    assert check.data["image_shape"] == [4, 3, 16, 16]
    assert math.isfinite(check.data["loss"]) and check.data["grad_norm"] > 0


class _Queue:
    def __init__(self, *items):
        self.items = list(items)

    def get(self, timeout):
        if not self.items:
            raise queue.Empty
        return self.items.pop(0)

    def empty(self):
        return not self.items


def test_all_reduce_results_errors_deaths_and_timeouts_reach_the_parent():
    alive, dead = types.SimpleNamespace(exitcode=None), types.SimpleNamespace(exitcode=1)
    future, past = time.monotonic() + 60, time.monotonic() - 1
    good = [{"rank": 0, "correct": True, "seconds": 0.1}, {"rank": 1, "correct": True, "seconds": 0.2}]
    assert functional._collect(_Queue(*good), [alive, alive], 2, future, "gloo") == good
    error = {"rank": 1, "error": "DistNetworkError: connection refused"}
    with pytest.raises(RuntimeError, match="connection refused"):
        functional._collect(_Queue(good[0], error), [alive, alive], 2, future, "gloo")
    with pytest.raises(RuntimeError, match="worker process died"):
        functional._collect(_Queue(good[0]), [alive, dead], 2, future, "nccl")
    with pytest.raises(TimeoutError, match="did not finish"):
        functional._collect(_Queue(good[0]), [alive, alive], 2, past, "gloo")
