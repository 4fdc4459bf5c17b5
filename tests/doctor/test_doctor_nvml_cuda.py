"""NVML on a real GPU: the driver version, and telemetry readings in physical ranges for the GPU torch uses."""

import pytest
import torch

from ganforge.doctor import gpu, nvml
from ganforge.monitor import nvml as nvml_reader

pytestmark = pytest.mark.cuda


def test_nvml_reads_the_driver_and_plausible_telemetry_of_the_gpu_torch_uses():
    with nvml_reader.session() as (api, problem):
        if api is None:
            pytest.skip(f"NVML unavailable: {problem}")
        driver = nvml.read_driver(api, problem)
        assert driver.version and driver.cuda and driver.source == "NVML"
        assert nvml_reader.device_count(api) >= torch.cuda.device_count()
        handle = nvml_reader.find_device(api, gpu.device_props(0).uuid)
        assert handle is not None, "NVML does not list the GPU torch calls cuda:0 (a MIG slice?)"
        t = nvml_reader.read_device(api, handle)
    assert 0 < t["temperature_c"] < 120 and 0 < t["sm_clock_max_mhz"] < 5000
    assert t["power_w"] is None or 0 < t["power_w"] <= 1.2 * t["power_limit_w"]
    checks = nvml.telemetry_checks(0, t)
    assert [c.id for c in checks][0] == "gpu.0.ecc"
