"""What the NVIDIA driver reports through NVML (nvidia-ml-py, the `gpu` extra): driver version and GPU telemetry.

NVML is optional: without it the driver version is read from /proc/driver/nvidia/version, and telemetry lines are
skipped with the reason.
"""

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ganforge.doctor import report as r
from ganforge.doctor.environment import DriverInfo

SECTION = "gpu"
PROC_VERSION = Path("/proc/driver/nvidia/version")

# Clock-event reason bits that mean the GPU is slowed down by heat or the board (nvml.h, nvmlClocksEventReason*).
# Power capping (0x4) and idling (0x1) are normal under load or at rest, so they are not warned about.
SLOWDOWN_REASONS = {0x8: "hardware slowdown", 0x20: "software thermal slowdown", 0x40: "hardware thermal slowdown"}
SLOWDOWN_REASONS[0x80] = "power-brake slowdown"
HOT_MARGIN_C = 5  # warn this close to the driver's slowdown temperature


@contextlib.contextmanager
def session() -> Iterator[tuple[Any, str | None]]:
    """Yield (pynvml, None) with NVML initialised, or (None, why NVML cannot be used)."""
    try:
        import pynvml
    except ImportError:
        yield None, "nvidia-ml-py is not installed: pip install 'ganforge[gpu]'"
        return
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as error:
        yield None, f"NVML: {error}"
        return
    try:
        yield pynvml, None
    finally:
        pynvml.nvmlShutdown()


def parse_proc_version(text: str) -> str | None:
    """The driver version in /proc/driver/nvidia/version ('... Kernel Module  535.104.05  Sat ...')."""
    match = re.search(r"Kernel Module\b.*?\s(\d+\.\d+(?:\.\d+)?)\s", text)
    return match.group(1) if match else None


def cuda_text(code: int) -> str:
    """NVML's CUDA version integer (12040) as '12.4'."""
    return f"{code // 1000}.{code % 1000 // 10}"


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def read_driver(nvml: Any, problem: str | None) -> DriverInfo:
    """The driver version from NVML when it is up, otherwise from the kernel module's /proc file."""
    if nvml is not None:
        version = _text(nvml.nvmlSystemGetDriverVersion())
        return DriverInfo(version, cuda_text(nvml.nvmlSystemGetCudaDriverVersion()), "NVML")
    if PROC_VERSION.is_file():
        version = parse_proc_version(PROC_VERSION.read_text())
        if version is not None:
            return DriverInfo(version, None, str(PROC_VERSION), problem)
    return DriverInfo(None, None, "none", problem)


def _query(nvml: Any, function: str, *args) -> Any:
    """One NVML query; None where this GPU or driver does not support it (consumer boards lack ECC, for one)."""
    try:
        return getattr(nvml, function)(*args)
    except nvml.NVMLError:
        return None


def device_count(nvml: Any) -> int:
    return nvml.nvmlDeviceGetCount()


def find_device(nvml: Any, uuid: str) -> Any:
    """NVML's handle of the GPU with this UUID ('GPU-…'), or None where NVML has no such device (a MIG instance)."""
    return _query(nvml, "nvmlDeviceGetHandleByUUID", uuid)


def read_device(nvml: Any, handle: Any) -> dict[str, Any]:
    """Telemetry of one GPU; a key is None where NVML does not report it."""
    ecc = _query(nvml, "nvmlDeviceGetEccMode", handle)
    power = _query(nvml, "nvmlDeviceGetPowerUsage", handle)
    limit = _query(nvml, "nvmlDeviceGetEnforcedPowerLimit", handle)
    return {
        "ecc_enabled": bool(ecc[0]) if ecc is not None else None,
        "ecc_uncorrected": _query(
            nvml,
            "nvmlDeviceGetTotalEccErrors",
            handle,
            nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
            nvml.NVML_VOLATILE_ECC,
        ),
        "sm_clock_mhz": _query(nvml, "nvmlDeviceGetClockInfo", handle, nvml.NVML_CLOCK_SM),
        "sm_clock_max_mhz": _query(nvml, "nvmlDeviceGetMaxClockInfo", handle, nvml.NVML_CLOCK_SM),
        "memory_clock_mhz": _query(nvml, "nvmlDeviceGetClockInfo", handle, nvml.NVML_CLOCK_MEM),
        "temperature_c": _query(nvml, "nvmlDeviceGetTemperature", handle, nvml.NVML_TEMPERATURE_GPU),
        "slowdown_temperature_c": _query(
            nvml, "nvmlDeviceGetTemperatureThreshold", handle, nvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN
        ),
        "power_w": power / 1000 if power is not None else None,
        "power_limit_w": limit / 1000 if limit is not None else None,
        "clock_event_reasons": _query(nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", handle),
    }


def _show(value: Any, unit: str) -> str:
    return "n/a" if value is None else f"{value:.0f}{unit}" if isinstance(value, float) else f"{value}{unit}"


def telemetry_checks(index: int, t: dict[str, Any]) -> list[r.Check]:
    """Verdicts on one GPU's telemetry: ECC health, then clocks, temperature and power with slowdowns."""
    prefix = f"gpu.{index}"
    if t["ecc_enabled"] is None:
        ecc = r.ok(f"{prefix}.ecc", SECTION, f"GPU {index} ECC", "not supported by this GPU", **t)
    elif t["ecc_uncorrected"]:
        ecc = r.warning(
            f"{prefix}.ecc",
            SECTION,
            f"GPU {index} ECC",
            f"{t['ecc_uncorrected']} uncorrected memory errors since the driver loaded",
            "stop using this GPU and inspect `nvidia-smi -q -d ECC,PAGE_RETIREMENT`; a GPU reset or RMA may be due",
            **t,
        )
    else:
        ecc = r.ok(f"{prefix}.ecc", SECTION, f"GPU {index} ECC", "on" if t["ecc_enabled"] else "off", **t)
    return [ecc, _thermal_check(prefix, index, t)]


def _thermal_check(prefix: str, index: int, t: dict[str, Any]) -> r.Check:
    value = (
        f"SM {_show(t['sm_clock_mhz'], '')}/{_show(t['sm_clock_max_mhz'], ' MHz')}, "
        f"memory {_show(t['memory_clock_mhz'], ' MHz')}, {_show(t['temperature_c'], ' C')}, "
        f"{_show(t['power_w'], '')}/{_show(t['power_limit_w'], ' W')}"
    )
    reasons = [name for bit, name in SLOWDOWN_REASONS.items() if (t["clock_event_reasons"] or 0) & bit]
    hot = (
        t["temperature_c"] is not None
        and t["slowdown_temperature_c"] is not None
        and t["temperature_c"] >= t["slowdown_temperature_c"] - HOT_MARGIN_C
    )
    if reasons or hot:
        why = ", ".join(reasons) or f"within {HOT_MARGIN_C} C of the slowdown temperature"
        return r.warning(
            f"{prefix}.clocks",
            SECTION,
            f"GPU {index} clocks/temp/power",
            f"{value}: {why}",
            "improve cooling or airflow, check `nvidia-smi -q -d PERFORMANCE,TEMPERATURE`",
            **t,
        )
    return r.ok(f"{prefix}.clocks", SECTION, f"GPU {index} clocks/temp/power", value, **t)
