"""Doctor's verdicts on what NVML reports (read through ganforge.monitor.nvml): driver version and GPU telemetry.

NVML is optional: without it the driver version is read from /proc/driver/nvidia/version, and telemetry lines are
skipped with the reason.
"""

import re
from pathlib import Path
from typing import Any

from ganforge.doctor import report as r
from ganforge.doctor.environment import DriverInfo
from ganforge.monitor.nvml import POWER_CAP, THROTTLE_REASONS

SECTION = "gpu"
PROC_VERSION = Path("/proc/driver/nvidia/version")

# Power capping is normal under load, so a health check warns only about the board's and heat's slowdowns.
SLOWDOWN_REASONS = {bit: name for bit, name in THROTTLE_REASONS.items() if bit != POWER_CAP}
HOT_MARGIN_C = 5  # warn this close to the driver's slowdown temperature


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
