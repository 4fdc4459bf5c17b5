"""The machine's devices: where `--device auto|cuda|cpu` runs, and what `--precision auto` picks there.

torch is imported where a device is looked at, not with this module: the command line reads DEVICE_CHOICES before
anything heavy is loaded (`ganforge --help` must not import torch).

`--kernels auto` picks the fused Triton kernels (ganforge.nets.triton_ops) where they can run and help: Triton
installed, a CUDA device, and no torch.compile in any mode (which generates its own fused Triton kernels from the
reference ops).

`--precision auto` (the reasons in `ganforge.train.precision`): bf16 on NVIDIA GPUs from Ampere on (compute
capability 8.0, bf16 tensor cores, no loss scaling needed), fp32 on older GPUs and on every CPU, even where bf16 is
native (AMX or AVX512-BF16): on the digits at equal images bf16 ended behind fp32 in both seeds tried.
"""

from pathlib import Path

from ganforge.errors import UserError

DEVICE_CHOICES = ("auto", "cuda", "cpu")
KERNEL_CHOICES = ("auto", "reference", "triton")
# --compile: off, or the torch.compile mode of the main phases' forwards (max-autotune and reduce-overhead replay CUDA
# graphs on CUDA); the flag alone is torch.compile's default mode, as when --compile was a switch.
COMPILE_OFF = "off"
COMPILE_MODES = (COMPILE_OFF, "default", "max-autotune", "reduce-overhead")
AMPERE = (8, 0)
CPU_BF16_FLAGS = ("amx_bf16", "avx512_bf16")  # /proc/cpuinfo names of the native bf16 instructions
CPUINFO = Path("/proc/cpuinfo")


def pick_device(choice: str, index: int = 0):
    """CUDA device `index` for "cuda", and for "auto" when torch sees a GPU; else the CPU (a torch.device).

    "cuda" where there is no usable GPU is the user's error, told before any work starts (torch would otherwise fail
    deep inside with an AttributeError on a CPU-only build)."""
    import torch

    if choice == "cuda" and not torch.cuda.is_available():
        why = (
            "this PyTorch is a CPU-only build"
            if torch.version.cuda is None
            else "PyTorch sees no CUDA GPU (check the driver and CUDA_VISIBLE_DEVICES)"
        )
        raise UserError(
            f"--device cuda: {why} (torch {torch.__version__}); pass --device cpu, or install a CUDA "
            "build of PyTorch (`ganforge doctor` checks the setup)"
        )
    if choice == "cpu" or not torch.cuda.is_available():
        return torch.device("cpu")
    return torch.device("cuda", index)


def choose_auto(device_type: str) -> tuple[str, str]:
    """`--precision auto` on this process's device: (mode, why)."""
    import torch

    capability = torch.cuda.get_device_capability() if device_type == "cuda" else None
    return pick_precision(device_type, capability, cpu_flags() if device_type == "cpu" else frozenset())


def pick_precision(device_type: str, capability: tuple[int, int] | None, cpu_flags: frozenset[str]) -> tuple[str, str]:
    """(mode, why) for a device: "cuda" with its compute capability, or "cpu" with its instruction-set flags."""
    if device_type == "cuda":
        version = f"{capability[0]}.{capability[1]}"
        if capability >= AMPERE:
            return "bf16", f"CUDA compute capability {version} has bf16 tensor cores"
        return "fp32", f"CUDA compute capability {version} < 8.0 has no bf16 tensor cores"
    native = [flag for flag in CPU_BF16_FLAGS if flag in cpu_flags]
    if native:
        return "fp32", (
            f"on CPU, even with native bf16 ({', '.join(native)}): bf16 trained to worse quality at equal "
            "images on the digits; --precision bf16 asks for it"
        )
    return "fp32", "the CPU has no native bf16 instructions (AMX or AVX512-BF16); bf16 would be emulated"


def cpu_flags() -> frozenset[str]:
    """The instruction-set flags of the first CPU in /proc/cpuinfo (empty where there is none)."""
    if not CPUINFO.exists():
        return frozenset()
    for line in CPUINFO.read_text().splitlines():
        if line.startswith("flags"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def pick_kernels(choice: str, device_type: str, compiled: bool) -> tuple[str, str]:
    """`--kernels` on a device: ("reference" or "triton", why); `compiled`: --compile is on, in any mode
    (`RuntimeConfig.compiling`).

    On a CPU, Triton runs only through its interpreter (TRITON_INTERPRET=1): numerically the kernels, slowly; the
    tests use it, and `--kernels triton` accepts it there so that a whole training step can be checked on a CPU;
    `auto` never picks it."""
    assert isinstance(compiled, bool), compiled  # a mode's name ("off" too) would read as true
    if choice == "reference":
        return "reference", "asked for"
    problem = kernels_problem(choice, device_type, compiled)
    if problem:
        raise UserError(problem)
    if choice == "triton":
        return "triton", "asked for"
    assert choice == "auto", choice
    why_not = _triton_problem(device_type, compiled, interpreted=False)
    if why_not:
        return "reference", f"auto: {why_not[0]}"
    return "triton", "auto: Triton is installed and the device is CUDA"


def describe_kernels(choice: str, device_type: str, compiled: bool) -> str:
    """The line the start of a run and --dry-run print: which fused ops run and why."""
    name, why = pick_kernels(choice, device_type, compiled)
    return f"kernels: {name} ({why})"


def kernels_problem(choice: str, device_type: str, compiled: bool) -> str | None:
    """Why `--kernels choice` cannot run on this device, as a complete message naming the fix, or None."""
    assert isinstance(compiled, bool), compiled
    problem = _triton_problem(device_type, compiled, _triton_interpreted()) if choice == "triton" else None
    return f"--kernels triton: {problem[0]}; {problem[1]}" if problem else None


def _triton_problem(device_type: str, compiled: bool, interpreted: bool) -> tuple[str, str] | None:
    """(why the Triton kernels cannot run here, the fix), or None; `interpreted`: a CPU may run them interpreted."""
    import importlib.util

    if importlib.util.find_spec("triton") is None:
        return "Triton is not installed", "PyTorch's CUDA wheels bring it (else `pip install triton`), or use reference"
    if compiled:
        return "--compile fuses the reference ops into Triton kernels of its own", "drop --compile or use reference"
    if device_type != "cuda" and not interpreted:
        return f"the kernels need a CUDA device (this run is on {device_type})", "use --kernels reference or auto"
    return None


def _triton_interpreted() -> bool:
    """Whether Triton is installed and runs kernels through its CPU interpreter (TRITON_INTERPRET=1, as Triton reads
    it)."""
    import importlib.util

    if importlib.util.find_spec("triton") is None:
        return False
    from triton import knobs

    return bool(knobs.runtime.interpret)
