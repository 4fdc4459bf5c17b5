"""Timing the real training phases on synthetic data: per-phase medians, FLOPs per iteration, memory.

One "iteration" is one training step as the loop runs it on average: G main and D main every step, the lazy
regularisers every `interval` steps (StyleGAN2 Sec. 3.1), the EMA update every step. Each phase is timed on its
own, and the iteration is their sum weighted by 1 / interval. The timed rounds come in `repeat` consecutive groups
of `steps` rounds (after the warm-up rounds); each group gives every phase's median, and so one iteration time: a
load that comes and goes on the machine shows as a spread between the groups.
"""

import dataclasses
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from ganforge.bench.flops import count_flops
from ganforge.bench.memory import GIB, OutOfMemory
from ganforge.config import Config
from ganforge.train.build import build
from ganforge.train.phases import Trainer, micro_batches, run_phase
from ganforge.train.schedules import ema_beta, plan_step, update_ema
from ganforge.train.step_memory import step_peak_bytes

EMA = "EMA"


@dataclass(frozen=True)
class Measurement:
    """What one configuration achieved on one device; figures per device unless named otherwise."""

    batch_gpu: int
    world_size: int
    G_params: int
    D_params: int
    repeats: tuple[dict[str, float], ...]  # per repeat: median milliseconds per call of each phase, EMA included
    intervals: dict[str, int]  # steps between calls
    flops_per_iteration: float
    memory_estimate_gb: float  # the step's traced peak (ganforge.train.step_memory)
    peak_memory_gb: float | None  # CUDA allocator peak; None on CPU

    @property
    def repeat_iteration_ms(self) -> list[float]:
        """One iteration's milliseconds in each repeat."""
        return [sum(ms / self.intervals[name] for name, ms in phases.items()) for phases in self.repeats]

    @property
    def repeat_img_per_s(self) -> list[float]:
        """Images per second over all devices in each repeat."""
        return [self.images_per_step * 1000 / ms for ms in self.repeat_iteration_ms]

    @property
    def phase_ms(self) -> dict[str, float]:
        """Each phase's median over the repeats."""
        return {name: statistics.median([phases[name] for phases in self.repeats]) for name in self.intervals}

    @property
    def images_per_step(self) -> int:
        return self.batch_gpu * self.world_size

    @property
    def img_per_s(self) -> float:
        """Images per second over all devices: the median over the repeats."""
        return statistics.median(self.repeat_img_per_s)

    @property
    def iteration_ms(self) -> float:
        """One iteration's milliseconds at the median img/s (with an odd number of repeats, the median repeat's;
        the phases' medians over the repeats need not add up to it exactly)."""
        return self.images_per_step * 1000 / self.img_per_s

    @property
    def tflops(self) -> float:
        return self.flops_per_iteration / (self.iteration_ms / 1000) / 1e12

    @property
    def memory_gb(self) -> float:
        """The measured peak where there is one, else the estimate."""
        return self.memory_estimate_gb if self.peak_memory_gb is None else self.peak_memory_gb


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _phase_calls(cfg: Config, phases, G_ema, device: torch.device) -> dict[str, tuple[int, Callable]]:
    """name -> (interval, call(trainer)) for every phase and the EMA update, on one synthetic batch in [-1, 1]."""
    s, d = cfg.schedule, cfg.data
    generator = torch.Generator().manual_seed(s.seed)
    shape = [s.batch_gpu, d.channels, d.resolution * d.aspect[0], d.resolution * d.aspect[1]]  # H, W of the data's
    images = (torch.rand(shape, generator=generator) * 2 - 1).to(device)
    labels = torch.zeros([s.batch_gpu, d.label_dim], device=device)
    plan = plan_step(cfg, 0, phases)  # its values; every phase is timed, due at 0 or not

    def phase_call(index: int, phase) -> Callable:
        def call(trainer: Trainer) -> dict:
            mbs = micro_batches(cfg, plan, index, images, labels, trainer.G.num_ws)
            return run_phase(trainer, phase, index, plan, mbs)

        return call

    calls = {phase.name: (phase.interval, phase_call(i, phase)) for i, phase in enumerate(phases)}
    beta = ema_beta(s.batch, 0, s.ema_kimg, None)
    calls[EMA] = (1, lambda trainer: update_ema(G_ema, trainer.G, beta))
    return calls


def _count(trainer: Trainer, calls: dict) -> float:
    """FLOPs of one iteration, from one eager call of each phase (the compiled forwards are swapped for the eager
    ones: same maths, and the counter needs to see every operator)."""
    eager = dataclasses.replace(trainer, synthesis_main=trainer.G.synthesis, D_main=trainer.D)
    return sum(count_flops(lambda call=call: call(eager)) / interval for interval, call in calls.values())


@dataclass(frozen=True)
class Rounds:
    """How many rounds (one call of every phase each) to run: `warmup` untimed, then `repeat` groups of `steps`."""

    steps: int
    warmup: int
    repeat: int

    @property
    def total(self) -> int:
        return self.warmup + self.repeat * self.steps


def time_rounds(
    trainer: Trainer,
    calls: dict,
    device: torch.device,
    rounds: Rounds,
    on_call: Callable = lambda: None,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[dict[str, float], ...]:
    """Per repeat, the median milliseconds per call of each phase over its `steps` rounds (`clock` in seconds)."""
    times = [{name: [] for name in calls} for _ in range(rounds.repeat)]
    for round_index in range(rounds.total):
        timed = round_index - rounds.warmup
        for name, (_, call) in calls.items():
            synchronize(device)
            start = clock()
            call(trainer)
            synchronize(device)
            if timed >= 0:
                times[timed // rounds.steps][name].append((clock() - start) * 1000)
            on_call()
    return tuple({name: statistics.median(values) for name, values in repeat.items()} for repeat in times)


def measure(
    cfg: Config,
    device: torch.device,
    rounds: Rounds,
    memory_cap_gb: float | None = None,
    on_call: Callable = lambda: None,
    traced_bytes: int | None = None,
) -> Measurement:
    """Build the networks and phases of `cfg`, count one iteration's FLOPs, then time every phase over `rounds`.

    Raises OutOfMemory when the peak memory (measured on CUDA, traced elsewhere) exceeds `memory_cap_gb`; on CPU
    this is decided from the trace before anything is built. `traced_bytes`: the step's traced peak where the caller
    has it, else traced here."""
    traced = step_peak_bytes(cfg, device.type == "cuda") if traced_bytes is None else traced_bytes
    estimate = traced / GIB
    if memory_cap_gb is not None and device.type != "cuda" and estimate > memory_cap_gb:
        raise OutOfMemory(f"estimated {estimate:.2f} GB > cap {memory_cap_gb:g} GB")
    trainer, phases, G_ema = build(cfg, device)
    calls = _phase_calls(cfg, phases, G_ema, device)
    flops = _count(trainer, calls)
    if device.type == "cuda":  # the peak of the timed calls: compiled forwards may need less than the eager count
        torch.cuda.reset_peak_memory_stats(device)
    repeats = time_rounds(trainer, calls, device, rounds, on_call)
    peak = torch.cuda.max_memory_allocated(device) / GIB if device.type == "cuda" else None
    if memory_cap_gb is not None and peak is not None and peak > memory_cap_gb:
        raise OutOfMemory(f"peak {peak:.2f} GB > cap {memory_cap_gb:g} GB")
    intervals = {name: interval for name, (interval, _) in calls.items()}
    params = [sum(p.numel() for p in net.parameters()) for net in (trainer.G, trainer.D)]
    return Measurement(cfg.schedule.batch_gpu, cfg.world_size, *params, repeats, intervals, flops, estimate, peak)
