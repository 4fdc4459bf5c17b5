"""The telemetry sampler against a fake NVML: per-signal min/mean/max per tick, and an NVML error mid-run that ends
sampling with one warning instead of ending the run."""

import threading

import pytest

from fake_nvml import FakeNvml, reading
from ganforge.monitor.readers import CpuReader, GpuReader, gpu_handles
from ganforge.monitor.sampler import THREAD_NAME, Sampler, summarise
from ganforge.monitor.telemetry import node_keys, status_text


def _sample_until_lost(nvml: FakeNvml, handles: list[str]) -> Sampler:
    """Sample every scripted reading (the fake raises once they are used up, which ends the thread)."""
    sampler = Sampler(GpuReader(nvml, handles), interval=1e-4)
    sampler.start()
    sampler._thread.join(timeout=30)
    assert not sampler._thread.is_alive()
    return sampler


def test_gpu_samples_are_summarised_per_signal_and_gpu():
    gpu_a = [reading(util=90, temp=60, throttle=0), reading(util=100, temp=70, throttle=0x4)]
    gpu_b = [reading(util=50, temp=80, used_gb=10), reading(util=60, temp=82, used_gb=20)]
    nvml = FakeNvml({"GPU-a": gpu_a, "GPU-b": gpu_b})
    stats = _sample_until_lost(nvml, gpu_handles(nvml, ["GPU-a", "GPU-b"])).drain()
    assert stats["GPU0/util"] == 95 and stats["GPU0/util/min"] == 90 and stats["GPU0/util/max"] == 100
    assert stats["GPU1/temp"] == 81 and stats["GPU1/temp/max"] == 82
    assert stats["GPU1/mem_used_gb"] == pytest.approx(15) and stats["GPU1/mem_total_gb"] == 80
    assert stats["GPU0/power_w"] == 300 and stats["GPU0/power_limit_w"] == 400 and stats["GPU0/sm_clock_mhz"] == 1980
    assert stats["GPU0/throttle"] == 0x4  # reason bits are OR-ed, not averaged
    assert "GPU1/throttle" not in stats  # a board that does not report them
    assert status_text(stats) == "gpu 75% 81C"  # mean utilisation of all GPUs, tick-mean of the hottest


def test_an_nvml_error_mid_run_stops_sampling_with_one_warning_and_keeps_what_was_read():
    nvml = FakeNvml({"GPU-a": [reading(util=80), reading(util=90)]})
    sampler = _sample_until_lost(nvml, gpu_handles(nvml, ["GPU-a"]))
    problem = sampler.take_problem()
    assert "NVMLError" in problem and "GPU is lost" in problem and "training goes on" in problem
    assert sampler.take_problem() is None  # warned once
    assert sampler.drain()["GPU0/util"] == 85
    assert sampler.drain() == {}  # nothing more is read
    sampler.stop()


def test_a_gpu_nvml_cannot_find_is_named():
    assert gpu_handles(FakeNvml({"GPU-a": []}), ["GPU-a", "MIG-x"]) == "NVML does not list MIG-x"


def test_stop_ends_the_thread_and_a_never_started_sampler_stops_too():
    sampler = Sampler(CpuReader(), interval=60)
    sampler.start()
    assert any(t.name == THREAD_NAME for t in threading.enumerate())
    sampler.stop()  # wakes the thread from its 60 s wait
    assert not any(t.name == THREAD_NAME for t in threading.enumerate())
    Sampler(CpuReader(), interval=1).stop()


def test_cpu_reader_reports_this_process():
    stats = CpuReader().read()
    assert stats["CPU/util"] >= 0 and 0.01 < stats["CPU/rss_gb"] < 64 and stats["CPU/avail_gb"] > 0
    assert status_text(summarise([stats])).startswith("cpu ")


def test_summarise_handles_signals_missing_from_some_samples():
    stats = summarise([{"a": 1.0}, {"a": 3.0, "b": 5.0}])
    assert stats == {"a": 2.0, "a/min": 1.0, "a/max": 3.0, "b": 5.0, "b/min": 5.0, "b/max": 5.0}


def test_several_nodes_are_told_apart_one_node_is_not():
    one = node_keys([(0, {"GPU0/util": 90.0}), (0, {})])
    assert one == {"GPU0/util": 90.0}
    two = node_keys([(0, {"GPU0/util": 90.0}), (0, {}), (1, {"GPU0/util": 50.0}), (1, {})])
    assert two == {"node0/GPU0/util": 90.0, "node1/GPU0/util": 50.0}
