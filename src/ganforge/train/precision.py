"""One explicit precision policy (STYLE 13): fp32 master weights always; what changes is how the forward runs.

- fp32: plain float32 (on CUDA with TF32 matmuls off, so "fp32" means fp32).
- tf32: float32 tensors, TF32 tensor-core matmuls and convolutions (CUDA only).
- bf16: autocast to bfloat16; its float32 exponent range needs no loss scaling.
- fp16: either autocast to float16, or (`num_fp16_res` > 0) the official StyleGAN2-ADA recipe where the networks run
  their highest-resolution blocks in float16 with activations clamped to +-256; both use one GradScaler per network.
  Regularisers (R1, path length) take gradients of unscaled outputs, so the scale never enters their maths; the
  non-finite check (which covers the scaler's overflow) is summed over ranks so every rank skips the same steps.
"""

import contextlib
import os

import torch

from ganforge import dist

_AUTOCAST = {"bf16": torch.bfloat16, "fp16": torch.float16}


class Precision:
    """Autocast contexts, GradScalers and the finite check for one run."""

    def __init__(self, mode: str, device: torch.device, num_fp16_res: int = 0):
        self.mode, self.device = mode, device
        # With the per-resolution recipe the networks cast per layer themselves; autocast would fight them.
        self.dtype = None if num_fp16_res else _AUTOCAST.get(mode)

    def autocast(self):
        """Context for forward passes of the networks."""
        if self.dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.dtype)

    def make_scaler(self) -> torch.amp.GradScaler:
        """A dynamic loss scaler for fp16; a disabled pass-through otherwise (one code path for every mode)."""
        return torch.amp.GradScaler(self.device.type, enabled=self.mode == "fp16")

    def matmul_policy(self):
        """TF32 on only for `tf32`, restored afterwards so the process keeps its previous settings."""
        return fp32_math(tf32=self.mode == "tf32")


@contextlib.contextmanager
def fp32_math(tf32: bool):
    """Let float32 matmuls and convolutions use TF32 tensor cores (`tf32=True`) or forbid it (IEEE fp32) inside the
    block, restoring the caller's settings afterwards. cuDNN allows TF32 convolutions by default, so code that
    promises fp32 (metrics, doctor's reference checks, `--precision fp32`) must say so explicitly."""
    backends = torch.backends.cuda.matmul, torch.backends.cudnn.conv
    saved = [backend.fp32_precision for backend in backends]
    for backend in backends:
        backend.fp32_precision = "tf32" if tf32 else "ieee"
    try:
        yield
    finally:
        for backend, value in zip(backends, saved, strict=True):
            backend.fp32_precision = value


def all_finite(*tensors: torch.Tensor) -> bool:
    """True when every value of every tensor is finite on every rank (one all-reduce, so all ranks agree)."""
    bad = torch.zeros([], device=tensors[0].device)
    for t in tensors:
        bad += (~torch.isfinite(t)).sum()
    return bool(dist.all_reduce_sum_(bad).item() == 0)


@contextlib.contextmanager
def kernel_policy(deterministic: bool):
    """The run's kernel choice, previous settings restored afterwards. By default cuDNN times its algorithms for each
    new convolution shape and keeps the fastest (the shapes of a training step never change, so the first step pays
    once); `--deterministic` turns that off and asks for deterministic kernels, since autotuning may pick a
    different algorithm, with different rounding, in two runs.

    CUBLAS_WORKSPACE_CONFIG must be in the environment before CUDA starts; it is set here for child processes and
    the message of torch's error names it if the parent did not set it."""
    saved = torch.are_deterministic_algorithms_enabled(), torch.backends.cudnn.benchmark
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = not deterministic
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(saved[0])
        torch.backends.cudnn.benchmark = saved[1]
