"""Reading the NVIDIA driver through NVML (nvidia-ml-py, the `gpu` extra), shared by `doctor` and the training
telemetry sampler. Functions take the imported `pynvml` module so that tests can hand in a fake one.
"""

import contextlib
from collections.abc import Iterator
from typing import Any

POWER_CAP = 0x4
# Clock-event reason bits that mean the GPU runs below its clocks for heat, power or the board (nvml.h,
# nvmlClocksEventReason*). Idling (0x1) and application clock settings (0x2) are left out: they are not slowdowns.
THROTTLE_REASONS = {
    POWER_CAP: "power cap",
    0x8: "hardware slowdown",
    0x20: "software thermal slowdown",
    0x40: "hardware thermal slowdown",
    0x80: "power-brake slowdown",
}


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


def query(nvml: Any, function: str, *args) -> Any:
    """One NVML query; None where this GPU or driver does not support it (consumer boards lack ECC, for one)."""
    try:
        return getattr(nvml, function)(*args)
    except nvml.NVMLError:
        return None


def device_count(nvml: Any) -> int:
    return nvml.nvmlDeviceGetCount()


def find_device(nvml: Any, uuid: str) -> Any:
    """NVML's handle of the GPU with this UUID ('GPU-…'), or None where NVML has no such device (a MIG instance)."""
    return query(nvml, "nvmlDeviceGetHandleByUUID", uuid)


def read_device(nvml: Any, handle: Any) -> dict[str, Any]:
    """Health and clocks of one GPU; a key is None where NVML does not report it."""
    ecc = query(nvml, "nvmlDeviceGetEccMode", handle)
    power = query(nvml, "nvmlDeviceGetPowerUsage", handle)
    limit = query(nvml, "nvmlDeviceGetEnforcedPowerLimit", handle)
    return {
        "ecc_enabled": bool(ecc[0]) if ecc is not None else None,
        "ecc_uncorrected": query(
            nvml, "nvmlDeviceGetTotalEccErrors", handle, nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nvml.NVML_VOLATILE_ECC
        ),
        "sm_clock_mhz": query(nvml, "nvmlDeviceGetClockInfo", handle, nvml.NVML_CLOCK_SM),
        "sm_clock_max_mhz": query(nvml, "nvmlDeviceGetMaxClockInfo", handle, nvml.NVML_CLOCK_SM),
        "memory_clock_mhz": query(nvml, "nvmlDeviceGetClockInfo", handle, nvml.NVML_CLOCK_MEM),
        "temperature_c": query(nvml, "nvmlDeviceGetTemperature", handle, nvml.NVML_TEMPERATURE_GPU),
        "slowdown_temperature_c": query(
            nvml, "nvmlDeviceGetTemperatureThreshold", handle, nvml.NVML_TEMPERATURE_THRESHOLD_SLOWDOWN
        ),
        "power_w": power / 1000 if power is not None else None,
        "power_limit_w": limit / 1000 if limit is not None else None,
        "clock_event_reasons": query(nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", handle),
    }


def read_load(nvml: Any, handle: Any) -> dict[str, float]:
    """What one GPU is doing now, for the training telemetry: utilisation %, memory GB, temperature C, power W,
    SM clock MHz and the throttle-reason bits. Utilisation, memory and temperature raise NVMLError when the driver
    cannot answer (a GPU that fell off the bus); the others are left out where the board does not report them."""
    rates = nvml.nvmlDeviceGetUtilizationRates(handle)
    memory = nvml.nvmlDeviceGetMemoryInfo(handle)
    load = {
        "util": float(rates.gpu),
        "mem_used_gb": memory.used / 2**30,
        "mem_total_gb": memory.total / 2**30,
        "temp": float(nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU)),
    }
    optional = {
        "power_w": (1 / 1000, "nvmlDeviceGetPowerUsage", ()),
        "power_limit_w": (1 / 1000, "nvmlDeviceGetEnforcedPowerLimit", ()),
        "sm_clock_mhz": (1.0, "nvmlDeviceGetClockInfo", (nvml.NVML_CLOCK_SM,)),
        "throttle": (1.0, "nvmlDeviceGetCurrentClocksThrottleReasons", ()),
    }
    for key, (scale, function, args) in optional.items():
        value = query(nvml, function, handle, *args)
        if value is not None:
            load[key] = value * scale
    return load
