"""The peak memory of a training step, known before any of it is spent.

One step is run on fake tensors (torch's FakeTensorMode: shapes, dtypes and strides, no data and no memory), every
phase of it as at the first step, then the EMA update, and every storage an operator creates is counted until it is
freed; the largest count is the step's peak. It holds what the device holds in training: G, D and G_ema with their
buffers, the gradients and Adam's two moments, the batch of reals and the next one the loader has already copied,
and every activation autograd keeps from a forward to its backward (R1 and path length differentiating gradients
included). On a CPU the same count of a real step measures what the trace predicts (tests/train/test_step_memory.py,
benchmarks/step_memory.py).

The trace runs the reference ops eagerly, as CUDA runs them with `--kernels reference` and without `--compile`:
Triton's fused kernels and compiled graphs keep fewer activations, so for them the figure is an upper bound (on a
CPU, training's Winograd convolutions, whose tiles differ, are left out too). What no trace sees (cuDNN and cuBLAS
workspaces, the CUDA caching allocator's fragmentation) is the HEADROOM a step must leave.
"""

import dataclasses
import warnings
import weakref

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves

from ganforge import dist
from ganforge.config import Config
from ganforge.devices import COMPILE_OFF
from ganforge.families import family_of
from ganforge.memory import available_device_bytes, size_text
from ganforge.train import growing
from ganforge.train.build import build, build_networks
from ganforge.train.phases import micro_batches, run_phase
from ganforge.train.precision import Precision
from ganforge.train.schedules import plan_step, update_ema

CUDA_BLOCK = 512  # the CUDA caching allocator rounds every allocation up to a multiple of 512 bytes
HEADROOM = 0.1  # the share of a step's traced peak kept free for what the trace does not see
CUDA_CONTEXT_BYTES = 2**29  # GPU memory the CUDA context holds outside PyTorch's allocator, about 0.5 GiB


class LiveBytes(TorchDispatchMode):
    """While active: the bytes of the distinct storages alive (`live`) and their most at once (`peak`). Every storage
    an operator creates is counted once (views share it), rounded up to `block` bytes, until it is freed."""

    def __init__(self, block: int = 1):
        super().__init__()
        self.block, self.live, self.peak = block, 0, 0
        self._counted: set[int] = set()

    def count(self, tensor: torch.Tensor) -> None:
        storage = tensor.untyped_storage()
        key = id(storage)
        if key in self._counted:
            return
        nbytes = -(-storage.nbytes() // self.block) * self.block
        self._counted.add(key)
        self.live += nbytes
        self.peak = max(self.peak, self.live)
        weakref.finalize(storage, self._freed, key, nbytes)

    def _freed(self, key: int, nbytes: int) -> None:
        self._counted.discard(key)
        self.live -= nbytes

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for leaf in tree_leaves(out):
            if isinstance(leaf, torch.Tensor):
                self.count(leaf)
        return out


def step_peak_bytes(cfg: Config, cuda: bool = True) -> int:
    """The peak bytes of one training step of `cfg` on one device, traced on fake tensors (no memory is spent, the RNG
    is left as it was, and no collective is issued, though the process group may be joined: every rank's step is
    alike); `cuda`: every allocation rounded as CUDA's caching allocator rounds it."""
    cfg, device = reference_config(cfg), torch.device("cpu")
    mode, counted = FakeTensorMode(allow_non_fake_inputs=True), LiveBytes(CUDA_BLOCK if cuda else 1)
    with torch.random.fork_rng(), dist.alone(), warnings.catch_warnings():
        # build() deep-copies G into G_ema; torch's Tensor.__deepcopy__ asks a fake tensor for its data pointer, which
        # it answers with a deprecation warning that means nothing here (the copy is a fake tensor too)
        warnings.filterwarnings("ignore", message="Accessing the data pointer of FakeTensor")
        G, D = _fake_networks(cfg, mode, device)
        with mode, counted:
            for tensor in (*G.parameters(), *G.buffers(), *D.parameters(), *D.buffers()):
                counted.count(tensor)
            run_step(cfg, device, (G, D))
    return counted.peak


def _fake_networks(cfg: Config, mode: FakeTensorMode, device: torch.device) -> tuple:
    """G and D as training builds them (layout, checkpointing, fp16 layers), on the meta device, then with fake
    tensors of `device` for their parameters and buffers (a module cannot be moved onto fake tensors)."""
    meta = torch.device("meta")
    with meta:
        networks = build_networks(cfg, meta, Precision.from_config(cfg, meta))
    fake = mode.fake_tensor_converter.from_meta_and_device
    for module in (m for network in networks for m in network.modules()):
        for name, param in module._parameters.items():
            if param is not None:
                module._parameters[name] = torch.nn.Parameter(fake(mode, param, device), param.requires_grad)
        for name, buffer in module._buffers.items():
            if buffer is not None:
                module._buffers[name] = fake(mode, buffer, device)
    return networks


def reference_config(cfg: Config) -> Config:
    """`cfg` as the trace runs it: the reference ops, eagerly."""
    return dataclasses.replace(cfg, runtime=dataclasses.replace(cfg.runtime, kernels="reference", compile=COMPILE_OFF))


def run_step(cfg: Config, device: torch.device, networks: tuple) -> None:
    """The step the trace counts, with `networks` (G, D): every phase on one batch (a growing run at its last stage,
    where it is largest), then the EMA update, with the loader's next batch held meanwhile."""
    trainer, phases, G_ema = build(cfg, device, Precision.from_config(cfg, device), networks)
    d, images_per_process = cfg.data, cfg.schedule.batch // cfg.world_size
    shape = [images_per_process, d.channels, d.resolution * d.aspect[0], d.resolution * d.aspect[1]]
    images, prefetched = torch.zeros(shape), torch.zeros(shape)  # noqa: F841 - held while the step runs, as in training
    labels = torch.zeros([images_per_process, d.label_dim])
    if cfg.model.grow:
        images = growing.reals_at(images, growing.grow(trainer, G_ema, round(cfg.schedule.kimg * 1000)))
    plan = plan_step(cfg, 0, phases)  # its values, not which phases it runs: every phase runs here
    for index, phase in enumerate(phases):
        run_phase(trainer, phase, index, plan, micro_batches(cfg, plan, index, images, labels, trainer.G.num_ws))
    update_ema(G_ema, trainer.G, 0.5)


def with_batch_gpu(cfg: Config, batch_gpu: int) -> Config:
    """`cfg` with another per-device micro-batch and the same global batch (more accumulation rounds), its
    minibatch-stddev group as resolve derives it for that micro-batch."""
    schedule = dataclasses.replace(cfg.schedule, batch_gpu=batch_gpu)
    model = dataclasses.replace(cfg.model, mbstd_group=min(cfg.model.mbstd_group, batch_gpu))
    return dataclasses.replace(cfg, schedule=schedule, model=model)


def smaller_micro_batches(cfg: Config) -> list[int]:
    """The per-device micro-batches below `cfg`'s that keep its global batch, largest first: they divide each
    process's share, split into minibatch-stddev groups, and halve for path length when that is on."""
    per_process, group = cfg.schedule.batch // cfg.world_size, cfg.model.mbstd_group
    halves = cfg.loss.pl_batch_shrink if cfg.loss.pl_weight > 0 else 1
    return [
        b
        for b in range(cfg.schedule.batch_gpu - 1, 0, -1)
        if per_process % b == 0 and b % min(group, b) == 0 and b % halves == 0
    ]


def fits(peak: int, available: int) -> bool:
    """Does a step of `peak` traced bytes fit in `available` bytes with HEADROOM to spare?"""
    return peak * (1 + HEADROOM) <= available


def largest_fitting(cfg: Config, available: int, peak: int, cuda: bool = True) -> tuple[int, int] | None:
    """(micro-batch, its traced peak): the largest of `smaller_micro_batches` whose step fits in `available` bytes,
    or None. `peak`: the traced peak at cfg's own micro-batch. The peak grows about linearly with the micro-batch,
    so the line through the smallest one's and `peak` picks the candidate, which a trace then confirms (stepping
    down while it does not)."""
    candidates = smaller_micro_batches(cfg)
    if not candidates:
        return None
    smallest = candidates[-1]
    low = step_peak_bytes(with_batch_gpu(cfg, smallest), cuda)
    if not fits(low, available):
        return None
    per_image = (peak - low) / (cfg.schedule.batch_gpu - smallest)
    predicted = [b for b in candidates if fits(round(low + per_image * (b - smallest)), available)]
    for b in candidates[candidates.index(predicted[0]) :] if predicted else []:
        traced = low if b == smallest else step_peak_bytes(with_batch_gpu(cfg, b), cuda)
        if fits(traced, available):
            return b, traced
    return smallest, low


def fit_problem(cfg: Config, available: int, where: str, cuda: bool = True) -> str | None:
    """None when a step of `cfg` fits in `available` bytes (`where`: what they are, for the message); else the
    refusal, naming the step's figure and the --batch-gpu that fits, or what else to do."""
    peak = step_peak_bytes(cfg, cuda)
    if fits(peak, available):
        return None
    s, d = cfg.schedule, cfg.data
    problem = (
        f"--batch-gpu {s.batch_gpu}: a training step of --cfg {cfg.preset} at {d.resolution * d.aspect[1]}x"
        f"{d.resolution * d.aspect[0]} in {cfg.precision.mode} needs about {size_text(peak)} (traced before training, "
        f"and {HEADROOM:.0%} more kept free for workspaces), more than the {size_text(available)} {where}"
    )
    fitting = largest_fitting(cfg, available, peak, cuda)
    if fitting is not None:
        batch_gpu, smaller = fitting
        return f"{problem}; pass --batch-gpu {batch_gpu} (about {size_text(smaller)}; the same --batch in more rounds)"
    can_recompute = family_of(cfg.model.generator).recomputes and not cfg.runtime.grad_checkpoint  # not on yet
    also = "--grad-checkpoint, " if can_recompute else ""
    return f"{problem}; no smaller --batch-gpu fits: try {also}a lower --cbase, or a GPU with more memory"


def budget(gpu_memory_gb: float | None, device: torch.device) -> tuple[int | None, str]:
    """(bytes a step may use, what they are): --gpu-memory's GB less the CUDA context's share; else on CUDA the
    device's free memory; else (None, "") and nothing is checked."""
    if gpu_memory_gb is not None:
        what = f"that --gpu-memory {gpu_memory_gb:g} leaves PyTorch (a CUDA context holds about 0.5 GiB)"
        return max(round(gpu_memory_gb * 2**30) - CUDA_CONTEXT_BYTES, 0), what
    if device.type == "cuda":
        return available_device_bytes(device), f"free on {torch.cuda.get_device_name(device)}"
    return None, ""
