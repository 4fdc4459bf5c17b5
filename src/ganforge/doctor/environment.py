"""Software versions and the NVIDIA driver / CUDA runtime compatibility verdict."""

import dataclasses
import importlib.metadata
import platform
import re
import sys

import torch

from ganforge import __version__
from ganforge.doctor import report as r

SECTION = "environment"
MIN_PYTHON = (3, 10)
MIN_TORCH = (2, 10)  # pyproject.toml's torch>=2.10

# Linux x86_64 driver that ships with each CUDA toolkit release (its GA), from NVIDIA's CUDA Toolkit Release Notes,
# Table 3 "CUDA Toolkit and Corresponding Driver Versions"
# (https://docs.nvidia.com/cuda/cuda-toolkit-release-notes/index.html#id5). A driver at least this new supports
# every feature of that runtime.
TOOLKIT_DRIVER = {
    (11, 0): "450.36.06",
    (11, 1): "455.23",
    (11, 2): "460.27.03",
    (11, 3): "465.19.01",
    (11, 4): "470.42.01",
    (11, 5): "495.29.05",
    (11, 6): "510.39.01",
    (11, 7): "515.43.04",
    (11, 8): "520.61.05",
    (12, 0): "525.60.13",
    (12, 1): "530.30.02",
    (12, 2): "535.54.03",
    (12, 3): "545.23.06",
    (12, 4): "550.54.14",
    (12, 5): "555.42.02",
    (12, 6): "560.28.03",
    (12, 8): "570.26",
    (12, 9): "575.51.03",
    (13, 0): "580.65.06",
}
# Minimum Linux driver for CUDA minor-version compatibility within a major release, from the same release notes
# (Table 2) and NVIDIA's "CUDA Compatibility" guide, section "Minor Version Compatibility"
# (https://docs.nvidia.com/deploy/cuda-compatibility/minor-version-compatibility.html). Below it CUDA does not start.
MINOR_COMPAT_DRIVER = {11: "450.80.02", 12: "525.60.13", 13: "580.65.06"}
DRIVER_URL = "https://www.nvidia.com/drivers"


@dataclasses.dataclass(frozen=True)
class DriverInfo:
    """The installed NVIDIA driver as far as it can be read: version, the newest CUDA it supports, and from where."""

    version: str | None
    cuda: str | None
    source: str
    problem: str | None = None


def parse_version(text: str) -> tuple[int, ...]:
    """'525.60.13' -> (525, 60, 13); '2.13.0+cu128' -> (2, 13, 0): the leading dotted run of integers."""
    match = re.match(r"\d+(\.\d+)*", text.strip())
    assert match, f"not a version: {text!r}"
    return tuple(int(part) for part in match.group(0).split("."))


def driver_compatibility(runtime: str | None, driver: DriverInfo, system: str) -> r.Check:
    """Verdict on whether `driver` can run torch's CUDA `runtime` ('12.8'), by NVIDIA's published driver table.

    failure: older than the major release's minor-compatibility minimum (CUDA cannot initialise);
    warning: new enough only through minor-version compatibility (runs, with a limited feature set);
    ok: at least the driver the runtime's toolkit shipped with.
    """
    cid, title = "environment.driver_compatibility", "driver vs CUDA runtime"
    if runtime is None:
        return r.skipped(cid, SECTION, title, "torch is a CPU-only build")
    if driver.version is None:
        return r.skipped(cid, SECTION, title, f"driver version unknown ({driver.problem})")
    if system != "Linux":
        return r.skipped(cid, SECTION, title, f"NVIDIA's driver table used here covers Linux, not {system}")
    return _linux_driver_verdict(cid, title, parse_version(runtime)[:2], driver)


def _linux_driver_verdict(cid: str, title: str, runtime: tuple[int, ...], driver: DriverInfo) -> r.Check:
    have = parse_version(driver.version)
    cuda = ".".join(map(str, runtime))
    floor = MINOR_COMPAT_DRIVER.get(runtime[0])
    if floor is None:
        return r.warning(
            cid, SECTION, title, f"no compatibility data for CUDA {cuda}", f"check {DRIVER_URL} for CUDA {cuda}"
        )
    full = TOOLKIT_DRIVER.get(runtime)
    if full is not None and parse_version(full) < parse_version(floor):
        floor = full  # CUDA 11.0 shipped before its family's compatibility floor; its own driver runs it
    data = {"runtime": cuda, "driver": driver.version, "minimum": floor, "toolkit_driver": full}
    if have < parse_version(floor):
        return r.failure(
            cid,
            SECTION,
            title,
            f"driver {driver.version} is older than {floor}, the minimum for CUDA {runtime[0]}.x",
            f"install NVIDIA driver >= {full or floor} ({DRIVER_URL})",
            **data,
        )
    if full is None:
        return _unlisted_minor_verdict(cid, title, cuda, driver, data)
    if have >= parse_version(full):
        return r.ok(cid, SECTION, title, f"driver {driver.version} >= {full} (CUDA {cuda})", **data)
    return r.warning(
        cid,
        SECTION,
        title,
        f"driver {driver.version} runs CUDA {cuda} only through minor-version compatibility (limited features)",
        f"install NVIDIA driver >= {full} ({DRIVER_URL})",
        **data,
    )


def _unlisted_minor_verdict(cid: str, title: str, cuda: str, driver: DriverInfo, data: dict) -> r.Check:
    """A runtime newer than the table: trust the CUDA version the driver itself reports through NVML."""
    if driver.cuda is not None and parse_version(driver.cuda) >= parse_version(cuda):
        return r.ok(cid, SECTION, title, f"driver {driver.version} supports CUDA {driver.cuda} >= {cuda}", **data)
    return r.warning(
        cid,
        SECTION,
        title,
        f"driver {driver.version} (CUDA {driver.cuda or 'unknown'}) may not cover all of CUDA {cuda}",
        f"install the NVIDIA driver that ships with CUDA {cuda} or newer ({DRIVER_URL})",
        **data,
    )


def _package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _cudnn_text(code: int) -> str:
    # cuDNN encodes major*1000+minor*100+patch up to 8.x and major*10000+minor*100+patch from 9.0 on.
    major, rest = (code // 10000, code % 10000) if code >= 90000 else (code // 1000, code % 1000)
    return f"{major}.{rest // 100}.{rest % 100}"


def _minimum_check(cid: str, title: str, have: tuple[int, ...], text: str, need: tuple[int, ...], fix: str):
    need_text = ".".join(map(str, need))
    if have[: len(need)] < need:
        return r.failure(cid, SECTION, title, f"{text} (ganforge needs >= {need_text})", fix)
    return r.ok(cid, SECTION, title, text)


def version_checks() -> list[r.Check]:
    """OS, Python, ganforge, torch, CUDA runtime, cuDNN, NCCL and triton."""
    cuda = torch.version.cuda
    py = platform.python_version()
    checks = [
        r.ok("environment.os", SECTION, "operating system", platform.platform()),
        _minimum_check("environment.python", "python", sys.version_info[:2], py, MIN_PYTHON, "use Python >= 3.10"),
        r.ok("environment.ganforge", SECTION, "ganforge", __version__),
        _minimum_check(
            "environment.torch",
            "torch",
            parse_version(torch.__version__),
            torch.__version__,
            MIN_TORCH,
            "pip install 'torch>=2.10' (https://pytorch.org/get-started/locally/)",
        ),
        r.ok("environment.cuda_runtime", SECTION, "torch CUDA runtime", cuda or "none (CPU-only build of torch)"),
    ]
    return checks + _cuda_library_checks(cuda is not None)


def _cuda_library_checks(cuda_build: bool) -> list[r.Check]:
    if not cuda_build:
        reason = "torch is a CPU-only build"
        return [
            r.skipped("environment.cudnn", SECTION, "cuDNN", reason),
            r.skipped("environment.nccl", SECTION, "NCCL", reason),
            r.skipped(
                "environment.triton",
                SECTION,
                "triton",
                f"{reason}; triton is only needed by --compile and --kernels triton on GPU",
            ),
        ]
    cudnn = torch.backends.cudnn.version()
    checks = [
        r.ok("environment.cudnn", SECTION, "cuDNN", _cudnn_text(cudnn))
        if cudnn is not None
        else r.warning(
            "environment.cudnn", SECTION, "cuDNN", "not found", "reinstall a CUDA build of torch (it bundles cuDNN)"
        )
    ]
    if torch.distributed.is_nccl_available():
        code = torch.cuda.nccl.version()  # a (major, minor, patch) tuple in current torch, an int in old ones
        nccl = ".".join(map(str, code)) if isinstance(code, tuple) else str(code)
        checks.append(r.ok("environment.nccl", SECTION, "NCCL", nccl))
    else:
        checks.append(r.warning("environment.nccl", SECTION, "NCCL", "not built in", "use a Linux CUDA build of torch"))
    triton = _package_version("triton")
    checks.append(
        r.ok("environment.triton", SECTION, "triton", triton)
        if triton
        else r.warning(
            "environment.triton",
            SECTION,
            "triton",
            "not installed",
            "pip install triton (needed by --compile and --kernels triton)",
        )
    )
    return checks


def driver_checks(driver: DriverInfo) -> list[r.Check]:
    """The driver version line and the compatibility verdict."""
    cid, title = "environment.driver", "NVIDIA driver"
    if driver.version is not None:
        cuda = f", supports CUDA {driver.cuda}" if driver.cuda else ""
        line = r.ok(cid, SECTION, title, f"{driver.version}{cuda} (from {driver.source})", cuda=driver.cuda)
    elif torch.version.cuda is None:
        line = r.skipped(cid, SECTION, title, f"no NVIDIA driver found ({driver.problem})")
    else:
        line = r.warning(
            cid, SECTION, title, f"not found ({driver.problem})", f"install an NVIDIA driver ({DRIVER_URL})"
        )
    return [line, driver_compatibility(torch.version.cuda, driver, platform.system())]
