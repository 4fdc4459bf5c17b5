"""GPU inventory and capability rules: what torch sees, what the driver sees, and which precisions each GPU runs."""

import dataclasses
import os
import re

import torch

from ganforge.doctor import nvml as nv
from ganforge.doctor import report as r
from ganforge.monitor import nvml as nvml_reader

SECTION = "gpu"
GIB = 1024**3


@dataclasses.dataclass(frozen=True)
class GpuProps:
    """The properties of one CUDA device that the checks use (a plain record, so tests can build one)."""

    index: int
    name: str
    major: int
    minor: int
    total_memory: int
    multi_processor_count: int
    uuid: str | None = None

    @property
    def sm(self) -> str:
        return f"sm_{self.major}{self.minor}"


def device_props(index: int) -> GpuProps:
    props = torch.cuda.get_device_properties(index)
    uuid = getattr(props, "uuid", None)
    return GpuProps(
        index,
        props.name,
        props.major,
        props.minor,
        props.total_memory,
        props.multi_processor_count,
        f"GPU-{uuid}" if uuid is not None else None,
    )


def tensor_core_support(major: int, minor: int) -> dict[str, bool]:
    """Which precisions run on tensor cores at this compute capability.

    fp16 tensor cores arrived with Volta (sm_70); bf16 and TF32 with Ampere (sm_80), per the CUDA C++
    Programming Guide's "Warp Matrix Functions" section (element types by architecture).
    """
    return {"fp16": (major, minor) >= (7, 0), "bf16": (major, minor) >= (8, 0), "tf32": (major, minor) >= (8, 0)}


def arch_supported(major: int, minor: int, arch_list: list[str]) -> bool:
    """Whether torch's kernels (`torch.cuda.get_arch_list()`) can run on a device of this compute capability.

    A cubin built for sm_XY runs on sm_XZ with Z >= Y (same major), and PTX for compute_XY is JIT-compiled for any
    device of capability >= X.Y (CUDA C++ Programming Guide, "Binary Compatibility" and "PTX Compatibility").
    Architecture-specific targets (sm_90a) run only on their own device.
    """
    for arch in arch_list:
        match = re.fullmatch(r"(sm|compute)_(\d+?)(\d)([af]?)", arch)
        if match is None:
            continue
        kind, arch_major, arch_minor, suffix = match.group(1), int(match.group(2)), int(match.group(3)), match.group(4)
        if suffix:
            runs = (arch_major, arch_minor) == (major, minor)
        elif kind == "sm":
            runs = arch_major == major and arch_minor <= minor
        else:
            runs = (arch_major, arch_minor) <= (major, minor)
        if runs:
            return True
    return False


def property_check(props: GpuProps, arch_list: list[str]) -> r.Check:
    """One line per GPU: name, capability, memory, SMs, tensor-core precisions; failure when torch lacks kernels."""
    support = tensor_core_support(props.major, props.minor)
    units = " ".join(name for name, has in support.items() if has) or "none"
    value = (
        f"{props.name}, {props.sm}, {props.total_memory / GIB:.1f} GiB, {props.multi_processor_count} SMs, "
        f"tensor cores: {units}"
    )
    data = {**dataclasses.asdict(props), **{f"{name}_tensor_cores": has for name, has in support.items()}}
    cid, title = f"gpu.{props.index}.properties", f"GPU {props.index}"
    if not arch_supported(props.major, props.minor, arch_list):
        return r.failure(
            cid,
            SECTION,
            title,
            f"{value}; this torch build has no kernels for {props.sm} (it has {' '.join(arch_list)})",
            "install a torch build whose CUDA version supports this GPU (https://pytorch.org/get-started/locally/)",
            **data,
        )
    if not support["fp16"]:
        return r.warning(
            cid,
            SECTION,
            title,
            f"{value}; no tensor cores",
            "expect slow training; use a GPU of sm_70 or newer",
            **data,
        )
    return r.ok(cid, SECTION, title, value, **data)


def precision_check(precision: str, gpus: list[GpuProps]) -> r.Check:
    """Whether `--precision` can run, and run fast, on these GPUs (or on the CPU when the list is empty)."""
    cid, title, section = "functional.precision", "precision", "functional"
    if precision in ("fp32", "bf16") and not gpus:
        return r.ok(cid, section, title, f"{precision} on CPU")
    if not gpus:
        if precision == "fp16":
            return r.failure(cid, section, title, "fp16 is not supported on CPU", "use --precision fp32 or bf16")
        return r.warning(cid, section, title, "tf32 has no effect on CPU", "use --precision fp32")
    if precision == "fp32":
        return r.ok(cid, section, title, "fp32 on every GPU")
    lacking = [g for g in gpus if not tensor_core_support(g.major, g.minor)[precision]]
    if not lacking:
        return r.ok(cid, section, title, f"{precision} tensor cores on every GPU")
    names = ", ".join(f"GPU {g.index} ({g.sm})" for g in lacking)
    alternative = "fp16" if all(tensor_core_support(g.major, g.minor)["fp16"] for g in lacking) else "fp32"
    if precision == "bf16":
        return r.failure(cid, section, title, f"bf16 unsupported on {names}", f"use --precision {alternative}")
    return r.warning(
        cid, section, title, f"{precision} has no tensor cores on {names}", f"use --precision {alternative}"
    )


def visibility_check(torch_count: int, nvml_count: int | None, visible_devices: str | None) -> r.Check:
    """Does torch see every GPU the driver sees? A GPU missing from CUDA but present in NVML is broken or hidden."""
    cid, title = "gpu.visible", "GPUs visible"
    data = {"torch": torch_count, "nvml": nvml_count, "CUDA_VISIBLE_DEVICES": visible_devices}
    if torch_count == 0:
        return _no_gpu_check(cid, title, nvml_count, visible_devices, data)
    if nvml_count is not None and visible_devices is None and nvml_count > torch_count:
        return r.warning(
            cid,
            SECTION,
            title,
            f"torch sees {torch_count} of the {nvml_count} GPUs the driver reports",
            "run `nvidia-smi` and check the missing GPU (fallen off the bus, MIG mode, or in use exclusively)",
            **data,
        )
    hidden = f" (CUDA_VISIBLE_DEVICES={visible_devices})" if visible_devices is not None else ""
    return r.ok(cid, SECTION, title, f"{torch_count} CUDA device(s){hidden}", **data)


def _no_gpu_check(cid: str, title: str, nvml_count: int | None, visible: str | None, data: dict) -> r.Check:
    value = "no CUDA GPU visible: ganforge will train on the CPU, and the GPU checks are skipped"
    if torch.version.cuda is None:
        fix = "install a CUDA build of torch (https://pytorch.org/get-started/locally/) on a machine with a GPU"
    elif nvml_count:
        fix = f"the driver sees {nvml_count} GPU(s): check CUDA_VISIBLE_DEVICES ({visible!r}) and the container's GPUs"
    else:
        fix = "install the NVIDIA driver and check `nvidia-smi` lists the GPU"
    return r.warning(cid, SECTION, title, value, fix, **data)


def inventory(nvml, problem: str | None) -> tuple[list[r.Check], list[GpuProps]]:
    """Visibility, then per GPU its properties and telemetry."""
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    nvml_count = nvml_reader.device_count(nvml) if nvml is not None else None
    checks = [visibility_check(count, nvml_count, os.environ.get("CUDA_VISIBLE_DEVICES"))]
    gpus = [device_props(index) for index in range(count)]
    arch_list = torch.cuda.get_arch_list() if gpus else []
    for props in gpus:
        checks.append(property_check(props, arch_list))
        checks += _telemetry(props, nvml, problem)
    return checks, gpus


def _telemetry(props: GpuProps, nvml, problem: str | None) -> list[r.Check]:
    cid, title = f"gpu.{props.index}.telemetry", f"GPU {props.index} telemetry"
    if nvml is None:
        return [r.skipped(cid, SECTION, title, problem or "NVML unavailable")]
    handle = nvml_reader.find_device(nvml, props.uuid) if props.uuid is not None else None
    if handle is None:
        return [r.skipped(cid, SECTION, title, f"NVML does not list this device by its UUID ({props.uuid})")]
    return r.guarded(
        cid,
        SECTION,
        title,
        "run `nvidia-smi -q` to see what the driver reports for this GPU",
        lambda: nv.telemetry_checks(props.index, nvml_reader.read_device(nvml, handle)),
    )
