"""One explicit precision policy: fp32 master weights always; what changes is how the forward runs.

- fp32: plain float32 (on CUDA with TF32 matmuls off, so "fp32" means fp32).
- tf32: float32 tensors, TF32 tensor-core matmuls and convolutions (CUDA only).
- bf16: autocast to bfloat16; its float32 exponent range needs no loss scaling.
- fp16: either autocast to float16, or (`fp16_res` > 0) the official StyleGAN2-ADA recipe where the networks run
  their highest-resolution blocks in float16 with activations clamped to +-256; both use one GradScaler per network.
  Regularisers (R1, path length) take gradients of unscaled outputs, so the scale never enters their maths; the
  non-finite check (which covers the scaler's overflow) is summed over ranks so every rank skips the same steps, and
  the skip is decided on the device (`nonfinite_flag`, `step_unless`): the step never waits for a value to reach
  the host.

The same object also owns the run's other numeric switches: the kernel policy (cuDNN autotuning, or deterministic
kernels), torch.compile of the main-phase forwards, the channels_last memory format and gradient checkpointing of
the networks' blocks. A run builds it once (`Precision.from_config`).

torch.compile's max-autotune and reduce-overhead modes replay CUDA graphs on CUDA: a compiled call's outputs live in
the graphs' memory pool, which the next replay overwrites, and a parameter's gradient from the compiled backward may
be that memory too. So, under CUDA graphs, the compiled forwards hand out copies of their outputs (a phase keeps
logits for its statistics across micro-batches), each micro-batch starts a new round of replays, and a phase
accumulates its gradients into zeroed buffers allocated outside the graphs. The gradient all-reduce runs in hooks
after the compiled backward, outside the graphs. On a CPU there are no CUDA graphs: reduce-overhead is refused there
(it would be default), and max-autotune tunes the CPU's kernels only.

`auto`, the default, is not a mode the networks run in: `resolve_auto` turns it into one of the four when the options
are resolved (the continued run's mode, else the hardware's choice, `ganforge.devices.choose_auto`), so the Config
(and every checkpoint) records what was chosen and why. bf16 needs no loss scaling
(float32's exponent range), so it is the fast mode NVIDIA GPUs from Ampere on get (compute capability 8.0, bf16
tensor cores). Older GPUs get fp32: they have no bf16 or TF32 tensor cores, and their fp16 needs the scaled recipe
that a user should choose knowingly. CPUs get fp32 even where bf16 is native (AMX or AVX512-BF16): on the digits
at equal images bf16 ended behind fp32 in both seeds tried (KID and SWD at 16 and 24 kimg,
benchmarks/quality_digits.py), and it did not make the small networks a CPU trains faster; `--precision bf16` asks
for it.
"""

import contextlib
import dataclasses
import functools
import os
from pathlib import Path

import torch

from ganforge import dist
from ganforge.config import AUTO_PRECISION, PRECISIONS, Config
from ganforge.devices import COMPILE_MODES, COMPILE_OFF, choose_auto
from ganforge.numerics import fp32_math

_AUTOCAST = {"bf16": torch.bfloat16, "fp16": torch.float16}
# The torch.compile modes whose inductor options turn CUDA graphs on (torch._inductor.list_mode_options:
# "triton.cudagraphs"); they apply on CUDA devices only.
CUDA_GRAPH_MODES = ("max-autotune", "reduce-overhead")


class Precision:
    """Autocast contexts, GradScalers, the finite check, and the process-wide numeric settings of one run."""

    def __init__(
        self,
        mode: str,
        device: torch.device,
        num_fp16_res: int = 0,
        deterministic: bool = False,
        compile: str = COMPILE_OFF,
        channels_last: bool = False,
        grad_checkpoint: bool = False,
    ):
        assert mode in PRECISIONS, f"{mode!r}: `auto` is made concrete by resolve_auto before a Precision is built"
        assert compile in COMPILE_MODES, compile
        self.mode, self.device, self.num_fp16_res = mode, device, num_fp16_res
        self.deterministic, self.compile, self.channels_last = deterministic, compile, channels_last
        self.grad_checkpoint = grad_checkpoint
        # With the per-resolution recipe the networks cast per layer themselves; autocast would fight them.
        self.dtype = None if num_fp16_res else _AUTOCAST.get(mode)

    @classmethod
    def from_config(cls, cfg: Config, device: torch.device) -> "Precision":
        p, r = cfg.precision, cfg.runtime
        return cls(p.mode, device, p.fp16_res, r.deterministic, r.compile, r.channels_last, r.grad_checkpoint)

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
    def policy(self):
        """The whole run inside: the matmul policy and the kernel policy (cuDNN autotuning or deterministic kernels)."""
        with kernel_policy(self.deterministic), self.matmul_policy():
            yield

    @property
    def memory_format(self) -> torch.memory_format:
        return torch.channels_last if self.channels_last else torch.contiguous_format

    @property
    def compiling(self) -> bool:
        return self.compile != COMPILE_OFF

    @property
    def cuda_graphs(self) -> bool:
        """Do the compiled forwards replay CUDA graphs (whose outputs the next replay overwrites)?"""
        return self.compile in CUDA_GRAPH_MODES and self.device.type == "cuda"

    def compiled(self, forward):
        """`forward` through torch.compile in the --compile mode, else as it is. Only the main phases' forwards go
        through here: R1 and path length differentiate their gradients again, which compiled graphs do not support.
        Under CUDA graphs the output is a copy, which the next replay leaves alone."""
        if not self.compiling:
            return forward
        fast = torch.compile(forward, mode=self.compile)
        return functools.partial(_copied_output, fast) if self.cuda_graphs else fast

    def start_micro_batch(self) -> None:
        """Before a micro-batch's forwards: under CUDA graphs, a new round of replays (the previous round's outputs
        may be overwritten; those kept were copied)."""
        if self.cuda_graphs:
            torch.compiler.cudagraph_mark_step_begin()

    def clear_gradients(self, params: list[torch.nn.Parameter]) -> None:
        """Before a phase's first backward: no gradients; under CUDA graphs zeroed buffers of their own, which the
        backward passes add to in place. Otherwise a parameter's gradient could be the compiled backward's output in
        the graphs' pool, overwritten by the next micro-batch's replay before it is added to. The same sums either
        way: a gradient that is None counts as zeros (GradientSync.finish)."""
        for p in params:
            p.grad = torch.zeros_like(p) if self.cuda_graphs else None


def _copied_output(forward, *args, **kwargs) -> torch.Tensor:
    return forward(*args, **kwargs).clone()


def nonfinite_flag(*tensors: torch.Tensor) -> torch.Tensor:
    """1.0 where any value of any tensor is not finite on any rank, else 0.0: a float32 scalar on their device (one
    all-reduce, so all ranks agree), in the form fused optimizers take as `found_inf`. Nothing is read back to the
    host: on CUDA the host keeps queueing work while the device decides."""
    bad = torch.zeros([], device=tensors[0].device)
    for t in tensors:
        bad += (~torch.isfinite(t)).sum()
    return (dist.all_reduce_sum_(bad) > 0).float()


def make_adam(params: list[torch.nn.Parameter], lr: float, betas: tuple[float, float], eps: float):
    """Adam as training runs it: fused (one kernel per device and dtype over all parameters), which can also skip a
    step on the device (`step_unless`)."""
    return torch.optim.Adam(params, lr=lr, betas=betas, eps=eps, fused=True)


def step_unless(opt: torch.optim.Optimizer, skip: torch.Tensor) -> None:
    """`opt.step()`, or nothing where `skip` (a float32 scalar on the parameters' device) is 1: the fused kernel then
    leaves every weight and moment bitwise as it was and the step count is restored, decided on the device. Fused
    Adam reads the flag the way GradScaler hands it over (its `found_inf` and `grad_scale` attributes); the gradients
    are already unscaled, so there is no scale to pass."""
    opt.found_inf, opt.grad_scale = skip, None
    try:
        opt.step()
    finally:
        del opt.found_inf, opt.grad_scale


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


def resolve_auto(cfg: Config, device_type: str, continued: tuple[str, dict] | None) -> Config:
    """`cfg` with --precision auto made concrete: the mode of the run this command continues (`continued`, its
    folder and config.json: a rerun on other hardware continues the same maths), else the hardware's choice. Rank 0
    decides for every rank."""
    if cfg.precision.mode != AUTO_PRECISION:
        return cfg
    if continued is not None:
        folder, old = continued
        mode, why = old["precision"]["mode"], f"kept from {Path(folder).name}, the run this command continues"
    else:
        mode, why = dist.broadcast_object(choose_auto(device_type) if dist.is_main() else None)
    return dataclasses.replace(cfg, precision=dataclasses.replace(cfg.precision, mode=mode, auto_reason=why))
