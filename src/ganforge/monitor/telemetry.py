"""The training loop's one handle on the observers: `Monitor` starts the sampler on each node's first process,
times the step's sections, profiles once on rank 0, and turns each tick into telemetry statistics (the alerts,
monitor/alerts.py, are checked by the run's log on the record it writes).

Statistics it adds per tick (see docs/watching.md): `GPU<i>/<signal>` or `CPU/<signal>` with /min and /max,
`Timing/<section>_share`, the CUDA allocator's `Memory/*_gb`, and `Loss/D_over_G`.
"""

import contextlib
import re
import time
from collections.abc import Callable
from pathlib import Path

import torch

from ganforge import dist
from ganforge.config import Config
from ganforge.monitor import nvml as nvml_reader
from ganforge.monitor.probe import Probe
from ganforge.monitor.profiler import StepProfiler
from ganforge.monitor.readers import CpuReader, GpuReader, gpu_handles
from ganforge.monitor.sampler import Sampler
from ganforge.stat_names import (
    ALLOCATED_GB,
    CPU_RSS_GB,
    CPU_UTIL,
    FRAGMENTATION_GB,
    LOSS_D,
    LOSS_D_OVER_G,
    LOSS_G,
    RESERVED_GB,
    TOTAL_GB,
    timing_share,
)


def step_probe(cfg: Config, device: torch.device) -> Probe:
    """The probe a run's step is timed by: it times only when the monitor samples (--monitor-interval > 0)."""
    return Probe(device, timing=cfg.run.monitor_interval > 0)


class Monitor:
    """A context manager: leaving it, on any path, stops the sampler thread and the profiler."""

    def __init__(
        self,
        cfg: Config,
        device: torch.device,
        run_dir: Path | None,
        start_nimg: int,
        say: Callable[[str], None],
        phases: dict[str, int] | None = None,
        probe: Probe | None = None,
    ):
        """`phases`: the profiler label of each training phase -> its interval in steps (the profiler's window
        covers every one); `probe`: what the step's sections are timed by (`step_probe`), else one of its own."""
        self.device, self.say, self.interval = device, say, cfg.run.monitor_interval
        self.probe = step_probe(cfg, device) if probe is None else probe
        warm_nimg = start_nimg + round(cfg.schedule.tick_kimg * 1000)  # one tick of warm-up before profiling
        steps = cfg.run.profile if run_dir is not None else 0
        profile_dir = run_dir and run_dir / "profile"
        self.profiler = StepProfiler(
            steps, warm_nimg, profile_dir, device, self.probe, say, phases or {}, detail=cfg.run.profile_detail
        )
        self._sampler: Sampler | None = None
        self._resources = contextlib.ExitStack()
        self._since: float | None = None

    def __enter__(self) -> "Monitor":
        if self.interval > 0 and dist.local_rank() == 0:
            with contextlib.ExitStack() as resources:  # closed here if starting fails, else in __exit__
                reader, problem = resources.enter_context(open_reader(self.device))
                if problem:
                    self.say(f"warning: {problem}")
                self._sampler = Sampler(reader, self.interval)
                resources.callback(self._sampler.stop)
                self._sampler.start()
                self._resources = resources.pop_all()
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        with self._resources:
            if exc_type is None:
                self.profiler.finish()
            else:
                self.profiler.abort()

    @contextlib.contextmanager
    def step(self, cur_nimg: int):
        """One training step (fetch, phases, EMA)."""
        if self._since is None:
            self._since = time.monotonic()
        with self.profiler.step(cur_nimg):
            yield

    def tick(self, stats: dict[str, float]) -> dict[str, float]:
        """`stats` with this tick's telemetry, section shares, allocator statistics and D/G loss ratio. Collective
        when telemetry is on (every process calls it at every tick)."""
        out = dict(stats)
        if LOSS_D in stats and stats.get(LOSS_G):
            out[LOSS_D_OVER_G] = stats[LOSS_D] / stats[LOSS_G]
        out |= allocator_stats(self.device)
        if self.interval <= 0:
            return out
        now, seconds = time.monotonic(), self.probe.drain()
        elapsed, self._since = now - (self._since or now), now
        out |= {timing_share(name): spent / max(elapsed, 1e-9) for name, spent in seconds.items()}
        if self._sampler is not None and (problem := self._sampler.take_problem()):
            self.say(f"warning: {problem}")
        drained = self._sampler.drain() if self._sampler is not None else {}
        return out | node_keys(dist.all_gather_object((dist.node_rank(), drained)))


@contextlib.contextmanager
def open_reader(device: torch.device):
    """Yield (reader, problem): every local GPU through NVML on CUDA, otherwise (or when NVML cannot be used, with
    the reason in `problem`) this process's CPU and memory."""
    if device.type != "cuda":
        yield CpuReader(), None
        return
    with nvml_reader.session() as (nvml, problem):
        handles = problem or gpu_handles(nvml, [_uuid(i) for i in range(torch.cuda.device_count())])
        if isinstance(handles, str):
            yield CpuReader(), f"GPU telemetry off ({handles}); sampling the CPU instead"
        else:
            yield GpuReader(nvml, handles), None


def _uuid(index: int) -> str:
    return f"GPU-{torch.cuda.get_device_properties(index).uuid}"


def node_keys(parts: list[tuple[int, dict[str, float]]]) -> dict[str, float]:
    """Merge the nodes' telemetry (one non-empty summary per node); keys gain `node<n>/` when there are several."""
    several = any(node > 0 for node, summary in parts if summary)
    return {f"node{node}/{k}" if several else k: v for node, summary in parts for k, v in summary.items()}


def allocator_stats(device: torch.device) -> dict[str, float]:
    """The CUDA caching allocator now: allocated, reserved, their difference (held but unused), the device's size."""
    if device.type != "cuda":
        return {}
    allocated, reserved = torch.cuda.memory_allocated(device) / 2**30, torch.cuda.memory_reserved(device) / 2**30
    return {
        ALLOCATED_GB: allocated,
        RESERVED_GB: reserved,
        FRAGMENTATION_GB: reserved - allocated,
        TOTAL_GB: torch.cuda.get_device_properties(device).total_memory / 2**30,
    }


def status_text(record: dict) -> str | None:
    """`gpu 97% 71C` (mean utilisation, hottest GPU) or `cpu 180% rss 1.2 GB` for the status line."""
    utils = [v for k, v in record.items() if re.fullmatch(r"(?:node\d+/)?GPU\d+/util", k)]
    temps = [v for k, v in record.items() if re.fullmatch(r"(?:node\d+/)?GPU\d+/temp", k)]
    if utils:
        return f"gpu {sum(utils) / len(utils):.0f}%" + (f" {max(temps):.0f}C" if temps else "")
    if CPU_UTIL in record:
        return f"cpu {record[CPU_UTIL]:.0f}% rss {record[CPU_RSS_GB]:.1f} GB"
    return None
