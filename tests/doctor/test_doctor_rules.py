"""The compatibility, capability and verdict rules, against mocked driver and device properties."""

import types

import pytest
import torch

from ganforge.doctor import environment as env
from ganforge.doctor import gpu, nvml, peaks, train_precision
from ganforge.doctor import report as r
from ganforge.doctor.environment import DriverInfo
from ganforge.monitor import nvml as nvml_reader


def _driver(version, cuda=None):
    return DriverInfo(version, cuda, "NVML")


@pytest.mark.parametrize(
    ("runtime", "driver", "status"),
    [
        ("12.8", "570.26", r.OK),  # exactly the toolkit's driver
        ("12.8", "575.57.08", r.OK),
        ("12.8", "535.104.05", r.WARNING),  # 12.x minor-version compatibility only
        ("12.8", "525.60.13", r.WARNING),  # the 12.x floor itself
        ("12.8", "525.60.12", r.FAILURE),
        ("12.1", "470.82.01", r.FAILURE),  # an 11.x-era driver cannot start CUDA 12
        ("13.0", "575.51.03", r.FAILURE),
        ("13.0", "580.65.06", r.OK),
        ("11.8", "520.61.05", r.OK),
        ("11.8", "470.42.01", r.WARNING),
        ("11.0", "450.36.06", r.OK),  # 11.0 shipped below the 11.x compatibility floor
        ("11.0", "450.36.05", r.FAILURE),
    ],
)
def test_driver_compatibility_by_nvidia_table(runtime, driver, status):
    check = env.driver_compatibility(runtime, _driver(driver), "Linux")
    assert check.status == status, check
    assert check.id == "environment.driver_compatibility"
    if status != r.OK:
        assert "install NVIDIA driver >=" in check.fix


def test_driver_compatibility_outside_the_table():
    # a minor release newer than the table: the driver's own CUDA version decides
    assert env.driver_compatibility("12.10", _driver("590.10", "13.1"), "Linux").status == r.OK
    assert env.driver_compatibility("12.10", _driver("575.51.03", "12.9"), "Linux").status == r.WARNING
    assert env.driver_compatibility("12.10", _driver("575.51.03", None), "Linux").status == r.WARNING
    assert env.driver_compatibility("14.0", _driver("700.1"), "Linux").status == r.WARNING
    # nothing to compare
    assert env.driver_compatibility(None, _driver("570.26"), "Linux").status == r.SKIPPED
    assert env.driver_compatibility("12.8", DriverInfo(None, None, "none", "NVML: gone"), "Linux").status == r.SKIPPED
    assert env.driver_compatibility("12.8", _driver("572.16"), "Windows").status == r.SKIPPED


def test_version_parsing():
    assert env.parse_version("525.60.13") == (525, 60, 13)
    assert env.parse_version("2.13.0+cu128") == (2, 13, 0)
    assert env.parse_version("570.26") < env.parse_version("570.124.06")
    assert env._cudnn_text(90100) == "9.1.0" and env._cudnn_text(8902) == "8.9.2"
    assert nvml.cuda_text(12040) == "12.4" and nvml.cuda_text(13000) == "13.0"
    proprietary = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n"
    open_module = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release Build  (dvs-builder)\n"
    assert nvml.parse_proc_version(proprietary) == "535.104.05"
    assert nvml.parse_proc_version(open_module) == "570.86.15"
    assert nvml.parse_proc_version("garbage") is None


@pytest.mark.parametrize(
    ("cc", "fp16", "bf16", "tf32"),
    [((6, 1), False, False, False), ((7, 0), True, False, False), ((7, 5), True, False, False)]
    + [((8, 0), True, True, True), ((8, 9), True, True, True), ((9, 0), True, True, True)],
)
def test_tensor_core_support_by_compute_capability(cc, fp16, bf16, tf32):
    assert gpu.tensor_core_support(*cc) == {"fp16": fp16, "bf16": bf16, "tf32": tf32}


@pytest.mark.parametrize(
    ("cc", "arch_list", "supported"),
    [
        ((8, 6), ["sm_80", "sm_90"], True),  # sm_80 cubin runs on sm_86 (same major)
        ((8, 0), ["sm_86"], False),  # but not the other way round
        ((9, 0), ["sm_80", "sm_90a"], True),
        ((9, 0), ["sm_80", "sm_86"], False),
        ((12, 0), ["sm_50", "sm_80", "sm_90", "compute_90"], True),  # PTX JIT for newer GPUs
        ((12, 0), ["sm_50", "sm_80", "sm_90"], False),  # the classic new-GPU, old-wheel failure
        ((10, 0), ["sm_100a"], True),
        ((10, 3), ["sm_100a"], False),  # arch-specific targets run only on their own GPU
        ((7, 5), ["sm_120"], False),
        ((7, 5), [], False),
    ],
)
def test_arch_supported(cc, arch_list, supported):
    assert gpu.arch_supported(*cc, arch_list) is supported


def _props(index=0, name="NVIDIA H100 80GB HBM3", cc=(9, 0), memory=80 * 2**30, sms=132):
    return gpu.GpuProps(index, name, cc[0], cc[1], memory, sms, f"GPU-0000000{index}")


def test_property_check_verdicts():
    good = gpu.property_check(_props(), ["sm_80", "sm_90"])
    assert good.status == r.OK and "sm_90" in good.value and "tensor cores: fp16 bf16 tf32" in good.value
    assert good.data["bf16_tensor_cores"] is True and good.data["multi_processor_count"] == 132
    blackwell = gpu.property_check(_props(name="NVIDIA RTX PRO 6000", cc=(12, 0)), ["sm_80", "sm_90"])
    assert blackwell.status == r.FAILURE and "no kernels for sm_120" in blackwell.value
    pascal = gpu.property_check(_props(name="Tesla P100", cc=(6, 0)), ["sm_60", "sm_70"])
    assert pascal.status == r.WARNING and "no tensor cores" in pascal.value


def test_precision_verdicts():
    h100, v100 = _props(0), _props(1, "Tesla V100-SXM2-16GB", (7, 0))
    assert gpu.precision_check("bf16", [h100]).status == r.OK
    bf16_on_v100 = gpu.precision_check("bf16", [h100, v100])
    assert bf16_on_v100.status == r.FAILURE and "GPU 1 (sm_70)" in bf16_on_v100.value
    assert bf16_on_v100.fix == "use --precision fp16"
    assert gpu.precision_check("tf32", [v100]).status == r.WARNING
    assert gpu.precision_check("fp16", [v100]).status == r.OK
    assert gpu.precision_check("fp16", [_props(name="Tesla P100", cc=(6, 0))]).fix == "use --precision fp32"
    assert gpu.precision_check("fp16", []).status == r.FAILURE  # refused on CPU, as train refuses it
    assert gpu.precision_check("tf32", []).status == r.WARNING
    assert gpu.precision_check("bf16", []).status == r.OK


def test_auto_precision_is_what_train_would_pick_on_the_first_gpu_or_the_cpu():
    h100, v100 = _props(0), _props(1, "Tesla V100-SXM2-16GB", (7, 0))
    assert train_precision("fp16", [v100]) == ("fp16", "")  # a named precision is checked as it is
    assert train_precision("auto", [h100, v100])[0] == "bf16" and "9.0" in train_precision("auto", [h100])[1]
    assert train_precision("auto", [v100, h100])[0] == "fp32"
    mode, why = train_precision("auto", [])
    assert mode == "fp32" and "bf16" in why


def test_visibility_verdicts():
    assert gpu.visibility_check(8, 8, None).status == r.OK
    missing = gpu.visibility_check(7, 8, None)
    assert missing.status == r.WARNING and "7 of the 8" in missing.value
    assert gpu.visibility_check(2, 8, "0,1").status == r.OK  # hidden on purpose
    none = gpu.visibility_check(0, None, None)
    assert none.status == r.WARNING and "no CUDA GPU visible" in none.value


def _with_uuid(uuid):
    return types.SimpleNamespace(
        name="NVIDIA A100-SXM4-80GB", major=8, minor=0, total_memory=80 * 2**30, multi_processor_count=108, uuid=uuid
    )


def test_inventory_with_mocked_gpus(monkeypatch):
    names = {0: ("NVIDIA A100-SXM4-80GB", 8, 0), 1: ("NVIDIA GeForce RTX 5090", 12, 0)}

    def properties(index):
        name, major, minor = names[index]
        return types.SimpleNamespace(
            name=name, major=major, minor=minor, total_memory=80 * 2**30, multi_processor_count=108, uuid=f"u{index}"
        )

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "get_device_properties", properties)
    monkeypatch.setattr(torch.cuda, "get_arch_list", lambda: ["sm_80", "sm_90"])
    checks, gpus = gpu.inventory(None, "nvidia-ml-py is not installed")
    assert [g.uuid for g in gpus] == ["GPU-u0", "GPU-u1"]
    by_id = {check.id: check for check in checks}
    assert by_id["gpu.visible"].status == r.OK
    assert by_id["gpu.0.properties"].status == r.OK
    assert by_id["gpu.1.properties"].status == r.FAILURE
    assert by_id["gpu.1.telemetry"].status == r.SKIPPED and "nvidia-ml-py" in by_id["gpu.1.telemetry"].value
    # with NVML: telemetry for the GPU it lists by UUID, a reason for the one it does not (a MIG instance, say)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda i: properties(i) if i else _with_uuid("1234"))
    checks, _ = gpu.inventory(_FakeNvml(), None)
    by_id = {check.id: check for check in checks}
    assert by_id["gpu.visible"].data["nvml"] == 2
    assert by_id["gpu.0.ecc"].status == r.OK and by_id["gpu.0.clocks"].status == r.OK
    assert by_id["gpu.1.telemetry"].status == r.SKIPPED and "GPU-u1" in by_id["gpu.1.telemetry"].value


class _FakeNvml(types.SimpleNamespace):
    """Just enough of pynvml for one GPU; values are what a hot, ECC-error-ridden A100 would report."""

    class NVMLError(Exception):
        pass

    NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, NVML_CLOCK_SM, NVML_CLOCK_MEM = 1, 0, 1, 2
    NVML_TEMPERATURE_GPU, NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 0, 1

    def __init__(self, **overrides):
        values = {"ecc": [1, 1], "errors": 0, "temperature": 60, "reasons": 0x4}
        values.update(overrides)
        super().__init__(values=values)

    def nvmlDeviceGetCount(self):
        return 2

    def nvmlSystemGetDriverVersion(self):
        return b"570.124.06"

    def nvmlSystemGetCudaDriverVersion(self):
        return 12080

    def nvmlDeviceGetHandleByUUID(self, uuid):
        if uuid != "GPU-1234":
            raise self.NVMLError("Not Found")
        return "handle"

    def nvmlDeviceGetEccMode(self, handle):
        if self.values["ecc"] is None:
            raise self.NVMLError("Not Supported")
        return self.values["ecc"]

    def nvmlDeviceGetTotalEccErrors(self, handle, kind, counter):
        return self.values["errors"]

    def nvmlDeviceGetClockInfo(self, handle, clock):
        return 1410 if clock == self.NVML_CLOCK_SM else 1593

    def nvmlDeviceGetMaxClockInfo(self, handle, clock):
        return 1410

    def nvmlDeviceGetTemperature(self, handle, sensor):
        return self.values["temperature"]

    def nvmlDeviceGetTemperatureThreshold(self, handle, kind):
        return 90

    def nvmlDeviceGetPowerUsage(self, handle):
        return 250_000

    def nvmlDeviceGetEnforcedPowerLimit(self, handle):
        return 400_000

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle):
        return self.values["reasons"]


def test_nvml_driver_and_telemetry_verdicts():
    driver = nvml.read_driver(_FakeNvml(), None)
    assert nvml_reader.find_device(_FakeNvml(), "GPU-1234") == "handle"
    assert nvml_reader.find_device(_FakeNvml(), "MIG-5678") is None
    assert driver == DriverInfo("570.124.06", "12.8", "NVML")
    healthy = nvml.telemetry_checks(0, nvml_reader.read_device(_FakeNvml(), "handle"))
    assert [c.status for c in healthy] == [r.OK, r.OK]
    assert healthy[1].value == "SM 1410/1410 MHz, memory 1593 MHz, 60 C, 250/400 W"
    ecc, clocks = nvml.telemetry_checks(3, nvml_reader.read_device(_FakeNvml(errors=2, temperature=87), "handle"))
    assert ecc.id == "gpu.3.ecc" and ecc.status == r.WARNING and "2 uncorrected" in ecc.value
    assert clocks.status == r.WARNING and "slowdown temperature" in clocks.value
    throttled = nvml.telemetry_checks(0, nvml_reader.read_device(_FakeNvml(reasons=0x40 | 0x4), "handle"))[1]
    assert throttled.status == r.WARNING and "hardware thermal slowdown" in throttled.value
    consumer = nvml.telemetry_checks(0, nvml_reader.read_device(_FakeNvml(ecc=None), "handle"))[0]
    assert consumer.status == r.OK and consumer.value == "not supported by this GPU"


def test_nvml_session_without_a_driver_says_why():
    with nvml_reader.session() as (handle, problem):
        if handle is None:
            assert problem and ("NVML" in problem or "nvidia-ml-py" in problem)
        else:  # a machine with a driver
            assert problem is None and handle.nvmlDeviceGetCount() >= 0


@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("NVIDIA H100 PCIe", "H100 PCIe"),
        ("NVIDIA H100 NVL", "H100 NVL"),
        ("NVIDIA H200", "H200 SXM"),
        ("NVIDIA A100-SXM4-80GB", "A100 80GB SXM4"),
        ("NVIDIA A100 80GB PCIe", "A100 80GB PCIe"),
        ("NVIDIA A100-PCIE-40GB", "A100 40GB"),
        ("Tesla V100-SXM2-16GB", "V100 SXM2"),
        ("Tesla V100-PCIE-32GB", "V100 PCIe"),
        ("NVIDIA L40S", "L40S"),
        ("NVIDIA L4", "L4"),
        ("NVIDIA A10", "A10"),
        ("Tesla T4", "T4"),
        ("NVIDIA GeForce RTX 4090", "GeForce RTX 4090"),
    ],
)
def test_peak_lookup(name, model):
    peak = peaks.lookup(name)
    assert peak is not None and peak.model == model and peak.source


def test_peak_lookup_unknown_and_lookalikes():
    assert peaks.lookup("NVIDIA A10G") is None
    assert peaks.lookup("NVIDIA L40") is None
    assert peaks.lookup("AMD Instinct MI300X") is None
    for _, peak in peaks.PEAKS:  # tensor cores never slower than the plain fp32 units
        assert peak.fp16 >= peak.fp32 and (peak.bf16 is None or peak.bf16 >= peak.fp32)
