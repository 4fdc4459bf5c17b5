"""`--precision auto`: bf16 where the hardware computes it fast, fp32 elsewhere, with the reason for the choice.

bf16 needs no loss scaling (float32's exponent range), so it is the safe fast mode wherever it is native: NVIDIA
GPUs from Ampere on (compute capability 8.0, bf16 tensor cores) and CPUs with AMX or AVX512-BF16 (their bf16
dot-product instructions; elsewhere oneDNN emulates bf16 and it is slower than fp32). Older GPUs get fp32: they have
no bf16 or TF32 tensor cores, and their fp16 needs the scaled recipe a user should choose knowingly.
"""

from pathlib import Path

import torch

AMPERE = (8, 0)
CPU_BF16_FLAGS = ("amx_bf16", "avx512_bf16")  # /proc/cpuinfo names of the native bf16 instructions
CPUINFO = Path("/proc/cpuinfo")


def pick_precision(device_type: str, capability: tuple[int, int] | None, cpu_flags: frozenset[str]) -> tuple[str, str]:
    """(mode, why) for a device: "cuda" with its compute capability, or "cpu" with its instruction-set flags."""
    if device_type == "cuda":
        version = f"{capability[0]}.{capability[1]}"
        if capability >= AMPERE:
            return "bf16", f"CUDA compute capability {version} has bf16 tensor cores"
        return "fp32", f"CUDA compute capability {version} < 8.0 has no bf16 tensor cores"
    native = [flag for flag in CPU_BF16_FLAGS if flag in cpu_flags]
    if native:
        return "bf16", f"the CPU has native bf16 instructions ({', '.join(native)})"
    return "fp32", "the CPU has no native bf16 instructions (AMX or AVX512-BF16); bf16 would be emulated"


def cpu_flags() -> frozenset[str]:
    """The instruction-set flags of the first CPU in /proc/cpuinfo (empty where there is none)."""
    if not CPUINFO.exists():
        return frozenset()
    for line in CPUINFO.read_text().splitlines():
        if line.startswith("flags"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def detect(device_type: str) -> tuple[str, str]:
    """`pick_precision` for this process's device."""
    capability = torch.cuda.get_device_capability() if device_type == "cuda" else None
    return pick_precision(device_type, capability, cpu_flags() if device_type == "cpu" else frozenset())
