"""`ganforge bench` from start to end: choose the batch, measure on one device, and under torchrun on all of them.

Every rank first measures alone (before joining the process group, so without all-reduces): that is the one-device
figure that scaling efficiency compares with. Then the ranks join the group, agree on rank 0's batch size, and
measure the real distributed step.
"""

import dataclasses
import os
import sys

import torch

from ganforge import dist
from ganforge.bench import render, search
from ganforge.bench.measure import Measurement, Rounds, measure
from ganforge.bench.memory import GIB, OutOfMemory, available_gb
from ganforge.bench.options import BenchOptions
from ganforge.bench.peak import device_peak
from ganforge.bench.shape import Shape, choose_shape, read_dataset
from ganforge.bench.training import training_config
from ganforge.config import AUTO_PRECISION
from ganforge.devices import choose_auto, pick_device
from ganforge.errors import UserError
from ganforge.memory import available_device_bytes
from ganforge.progress import progress_bar
from ganforge.train.precision import Precision
from ganforge.train.step_memory import step_peak_bytes


def local_device(name: str) -> torch.device:
    """The device this process would train on (`dist.init`'s choice), without joining any process group."""
    device = pick_device(name, dist.local_rank())
    if device.type == "cuda":
        torch.cuda.set_device(device)
    return device


def _memory_cap(options: BenchOptions, device: torch.device) -> float | None:
    """The cap a batch must stay under: the option, or on CPU the available system memory (CUDA has real OOMs)."""
    if options.memory_cap_gb is not None or device.type == "cuda":
        return options.memory_cap_gb
    return available_gb()


class _Measurer:
    """Measures configurations of one set of options on this device, with a tqdm bar per measurement when enabled
    (on a terminal, rank 0 only)."""

    def __init__(self, options: BenchOptions, shape: Shape, device: torch.device, cap: float | None, bars: bool):
        self.options, self.shape, self.device, self.cap, self.bars = options, shape, device, cap, bars
        self.rounds = Rounds(options.steps, options.warmup, options.repeat)
        self._traced: dict[int, int] = {}

    def config(self, world_size: int, batch_gpu: int | None = None):
        return training_config(self.options, self.shape, world_size, self.device.type, batch_gpu)

    def measure(self, cfg, label: str, cap: float | None, traced_bytes: int | None = None) -> Measurement:
        calls = 3 + (cfg.loss.pl_weight > 0) + (cfg.loss.gamma > 0)  # G main, D main, EMA, and the regularisers
        total = self.rounds.total * calls
        with progress_bar(total=total, desc=label, unit="call", leave=False, enabled=self.bars) as bar:
            return measure(cfg, self.device, self.rounds, cap, on_call=bar.update, traced_bytes=traced_bytes)

    def traced(self, batch_gpu: int) -> int:
        """The traced peak bytes of one device's step at `batch_gpu` (traced once per size)."""
        if batch_gpu not in self._traced:
            cfg = self.config(1, batch_gpu)
            self._traced[batch_gpu] = step_peak_bytes(cfg, cuda=self.device.type == "cuda")
        return self._traced[batch_gpu]

    def one_device(self, batch_gpu: int) -> Measurement:
        return self.measure(self.config(1, batch_gpu), f"batch {batch_gpu}", self.cap, self.traced(batch_gpu))

    def predicted_out_of_memory(self, batch_gpu: int) -> str | None:
        """Why a step at `batch_gpu` will not fit, from its trace (above the cap, or on CUDA the free memory), or
        None."""
        limit, what = self.cap, "cap"
        if limit is None and self.device.type == "cuda":
            limit, what = available_device_bytes(self.device) / GIB, "free"
        traced = self.traced(batch_gpu) / GIB
        if limit is None or traced <= limit:
            return None
        return f"predicted {traced:.2f} GB > {what} {limit:g} GB (a trace of the step, before it was built)"


def run(options: BenchOptions, progress: bool | None = None) -> dict | None:
    """Measure and return the result dict (schema in docs/bench.md) on rank 0, None on other ranks. `progress`
    None shows bars when stderr is a terminal."""
    device = local_device(options.device_choice)
    if options.precision_choice == AUTO_PRECISION:  # what `train --precision auto` picks on this device
        options = dataclasses.replace(options, precision=choose_auto(device.type)[0])
    world = int(os.environ["WORLD_SIZE"]) if dist.launched_by_torchrun() else 1
    rank0 = int(os.environ.get("RANK", "0")) == 0
    shape = choose_shape(options, None if options.data is None else read_dataset(options.data))
    bars = rank0 and (sys.stderr.isatty() if progress is None else progress)
    measurer = _Measurer(options, shape, device, _memory_cap(options, device), bars)
    preset = measurer.config(world)  # validates the options before any work
    with Precision(options.precision, device).matmul_policy():
        peak = device_peak(device, options.precision)
        found = None
        if options.auto_batch:
            sizes = search.candidate_sizes(options.max_batch_gpu)
            candidates = search.try_sizes(sizes, measurer.one_device, device, measurer.predicted_out_of_memory)
            found = search.summarize(candidates, preset.schedule.batch, world)
        batch_gpu = found.recommended if found else options.batch_gpu or preset.schedule.batch_gpu
        single = found.measurement_of(batch_gpu) if found else _fixed_batch(measurer, batch_gpu)
        together = _distributed(measurer, world, batch_gpu) if world > 1 else None
    if not rank0:
        return None
    return render.result(options, shape, preset, device, peak, (single, together), found, measurer.cap)


def _fixed_batch(measurer: _Measurer, batch_gpu: int) -> Measurement:
    """The measurement at the batch the user gave; out of memory is their error to fix."""
    try:
        return measurer.one_device(batch_gpu)
    except (torch.cuda.OutOfMemoryError, OutOfMemory) as error:
        reason = str(error).splitlines()[0]
        raise UserError(
            f"--batch-gpu {batch_gpu}: out of memory on {measurer.device} ({reason}); use a smaller "
            "--batch-gpu, or --batch-gpu auto to find the largest that fits"
        ) from None


def _distributed(measurer: _Measurer, world: int, batch_gpu: int) -> Measurement:
    """The step on every rank together, at rank 0's batch size."""
    dist.init(measurer.options.device_choice)
    try:
        batch_gpu = dist.broadcast_object(batch_gpu)
        cfg = measurer.config(world, batch_gpu)
        together = measurer.measure(cfg, f"{world} ranks, batch {batch_gpu}", None)
        dist.barrier()  # no rank leaves the group while a peer is still in its last collective
        return together
    finally:
        dist.shutdown()
