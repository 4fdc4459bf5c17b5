"""What a run reports: the tick statistics, reduced over every rank (one all-reduce per tick), and the events that
RunLog passes to the run's sinks (events.py; train/sinks.py: log.txt and the terminal, stats.jsonl, TensorBoard, the
trackers); `reals.png` and `fakes<kimg>.png`.

Only rank 0 writes.
"""

import resource
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import PIL.Image
import torch

from ganforge import dist
from ganforge.data.grid import image_grid
from ganforge.data.loader import to_float
from ganforge.durable import replacing
from ganforge.events import FanOut, Sink
from ganforge.stat_names import DATA_WAIT_SHARE, IMG_PER_S, PEAK_GB, SEC_PER_KIMG, SKIPPED, TOTAL_S
from ganforge.train.sinks import folder_sinks
from ganforge.train.text_sink import hms


class TickStats:
    """Per-sample statistics of the current tick, kept on the device (no host sync) until `reduce`."""

    def __init__(self):
        self._sums: dict[str, torch.Tensor] = {}
        self._counts: dict[str, int] = {}

    def add(self, stats: dict[str, torch.Tensor]) -> None:
        for key, values in stats.items():
            values = values.detach().float().flatten()
            self._sums[key] = self._sums.get(key, 0) + values.sum()
            self._counts[key] = self._counts.get(key, 0) + values.numel()

    def reduce(
        self, device: torch.device, replicated: dict[str, torch.Tensor | float] | None = None
    ) -> dict[str, float]:
        """Means over every rank (Skipped/* and nothing else as sums), then reset; with `replicated`, values that are
        the same on every rank (not reduced), read back in the same transfer: a tick makes the host wait for the
        device once. Collective."""
        keys = sorted(self._sums)
        replicated = replicated or {}
        on_device = [k for k, v in replicated.items() if isinstance(v, torch.Tensor)]
        parts = []
        if keys:
            sums = torch.stack([self._sums[k].to(device) for k in keys])
            counts = torch.tensor([float(self._counts[k]) for k in keys]).to(device, non_blocking=True)
            parts.append(dist.all_reduce_sum_(torch.cat([sums, counts])))
        parts += [replicated[k].detach().float().reshape(1).to(device, non_blocking=True) for k in on_device]
        values = torch.cat(parts).tolist() if parts else []
        n = len(keys)
        self._sums.clear()
        self._counts.clear()
        out = {k: values[i] if k.startswith(SKIPPED) else values[i] / values[n + i] for i, k in enumerate(keys)}
        out |= {k: v for k, v in replicated.items() if not isinstance(v, torch.Tensor)}
        return out | dict(zip(on_device, values[2 * n :], strict=True))


def peak_memory_gb(device: torch.device) -> float:
    """Peak allocated memory: CUDA allocator peak, or the process's peak resident set size on CPU (Linux: KiB)."""
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**30
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def save_grid(images: torch.Tensor, path: Path, columns: int) -> np.ndarray:
    grid = image_grid(images, columns)
    with replacing(path) as tmp:
        PIL.Image.fromarray(grid[:, :, 0] if grid.shape[2] == 1 else grid).save(tmp)
    return grid


ESTIMATE_AFTER_S = 10.0  # seconds of training steps, the first one excluded, before a run says its own speed
ESTIMATE_FROM_S = 60.0  # runs whose rest takes less than this say nothing: the first status line comes soon enough


class RunLog:
    """A run's clock (tick timing, the early estimate) and its events, passed to `sinks` in their order: by default
    the run folder's (train/sinks.py: log.txt and the terminal, stats.jsonl, TensorBoard); none where `run_dir` is
    None (ranks other than 0, which only take part in reducing the tick statistics). `watch(record)` returns the
    alerts that start at a tick. `outcome` is what the sinks are told when the log closes: "failed" unless the loop
    says "finished" or "stopped"."""

    def __init__(
        self,
        run_dir: Path | None,
        total_nimg: int,
        start_nimg: int,
        sinks: Sequence[Sink] | None = None,
        watch: Callable[[dict], list[str]] | None = None,
    ):
        self.run_dir, self.total_nimg, self.outcome, self._watch = run_dir, total_nimg, "failed", watch
        if sinks is None:
            sinks = folder_sinks(run_dir, total_nimg, start_nimg) if run_dir is not None else ()
        self._sinks = FanOut(sinks)
        self._quiet = not self._sinks.sinks
        self._start_time, self._start_nimg = time.monotonic(), start_nimg
        self._tick_time, self._tick_nimg = self._start_time, start_nimg
        self._data_seconds = 0.0
        self._first_step: tuple[float, int] | None = None  # when and where the first step ended
        self._estimated = False  # the run's speed said, by the estimate or a status line

    def print(self, text: str) -> None:
        """A line for the user: terminal (above the bar) and log.txt."""
        self._sinks.line(text, terminal=True)

    def record(self, text: str) -> None:
        """A line for log.txt only (detail the terminal already showed when the run started)."""
        self._sinks.line(text, terminal=False)

    def start_clock(self) -> None:
        """Time the first tick from here, not from before the setup (network build, summaries, loader start)."""
        self._start_time = self._tick_time = time.monotonic()

    def data_wait(self, seconds: float) -> None:
        self._data_seconds += seconds

    def step(self, cur_nimg: int) -> None:
        """After each training step: once ESTIMATE_AFTER_S of steps have passed since the first one ended (it compiles
        and allocates), say the speed measured on this machine and how long the rest of the run takes at it, before
        the first tick's status line, which may be minutes away on a CPU."""
        if self._estimated or self._quiet:
            return
        now = time.monotonic()
        if self._first_step is None:
            self._first_step = (now, cur_nimg)
            return
        since, start_nimg = self._first_step
        if now - since < ESTIMATE_AFTER_S:
            return
        self._estimated = True
        rate = (cur_nimg - start_nimg) / (now - since)
        remaining = (self.total_nimg - cur_nimg) / max(rate, 1e-9)
        if remaining >= ESTIMATE_FROM_S:
            self.print(
                f"estimate: {rate:.1f} img/s on this machine over {cur_nimg - start_nimg} images; the remaining "
                f"{(self.total_nimg - cur_nimg) / 1000:g} kimg take about {hms(remaining)} at that speed (each "
                "tick's status line updates it)"
            )

    def tick(self, cur_nimg: int, cur_tick: int, stats: dict[str, float], device: torch.device) -> None:
        """One tick: timing, memory and the reduced training statistics, with the alerts that start at it."""
        now = time.monotonic()
        seconds, images = now - self._tick_time, cur_nimg - self._tick_nimg
        rate = images / max(seconds, 1e-9)
        record = {
            "tick": cur_tick,
            "kimg": cur_nimg / 1000,
            **stats,
            IMG_PER_S: rate,
            SEC_PER_KIMG: 1000 / max(rate, 1e-9),
            DATA_WAIT_SHARE: self._data_seconds / max(seconds, 1e-9),
            TOTAL_S: now - self._start_time,
            PEAK_GB: peak_memory_gb(device),
        }
        self._tick_time, self._tick_nimg, self._data_seconds = now, cur_nimg, 0.0
        if self._quiet or images == 0:  # nothing trained since the last record (start or resume)
            return
        self._estimated = True  # the status line says the speed from now on
        # The alerts are a stage before the fan-out, not a sink: every sink keeps them with the record (stats.jsonl
        # under `alerts`, the trackers as alert events, the terminal as warnings), so they are known before any sink
        # sees the tick; and the watch sees each record once, however many sinks there are.
        alerts = self._watch(record) if self._watch is not None else []
        self._sinks.tick(record, alerts, cur_nimg)

    def metric(self, record: dict, cur_nimg: int) -> None:
        """One metric result (a log line and TensorBoard scalars under Metrics/)."""
        self._sinks.metric(record, cur_nimg)

    def images(self, tag: str, grid: np.ndarray, path: Path, cur_nimg: int) -> None:
        """A sample grid, saved at `path`."""
        self._sinks.images(tag, grid, path, cur_nimg)

    def saved(self, kind: str, path: Path) -> None:
        """A snapshot file or a checkpoint folder (`kind`) was written: the trackers get it if asked to."""
        self._sinks.saved(kind, path)

    def close(self) -> None:
        self._sinks.close(self.outcome)


def label_meta(dataset) -> dict:
    """What a conditional run's label inputs mean, for its snapshots: its data's labels as classes (one-hot) or as
    label vectors, and their names; {} for an unconditional run."""
    if dataset.label_dim == 0:
        return {}
    kind = "classes" if dataset.raw_labels.ndim == 1 else "vectors"
    return {"labels": {"kind": kind, "names": [str(name) for name in dataset.label_names]}}


def kimg_name(cur_nimg: int, schedule) -> str:
    """`000012` for 12 kimg; with ticks or a length that are not whole kimg, `000000.064` for 64 images."""
    if round(schedule.tick_kimg * 1000) % 1000 == 0 and round(schedule.kimg * 1000) % 1000 == 0:
        return f"{cur_nimg // 1000:06d}"
    return f"{cur_nimg / 1000:010.3f}"


GRID_CHUNK_PIXELS = 2**16  # pixels per channel generated in one call for the fakes grid (256 images of 16x16)


class SampleGrid:
    """The fixed images of `reals.png` and the fixed latents of `fakes<kimg>.png` (seeded once per run; the fakes use
    constant noise, so successive grids differ only because the generator changed)."""

    def __init__(self, cfg, dataset, device: torch.device):
        rows, cols = cfg.data.aspect
        height, width = cfg.data.resolution * rows, cfg.data.resolution * cols
        self.columns = min(16, max(4, 512 // width))
        count = self.columns * min(8, max(2, 256 // height))
        gen = torch.Generator().manual_seed(cfg.schedule.seed)
        order = torch.randperm(len(dataset), generator=gen).repeat(count // len(dataset) + 1)[:count]
        if dataset.streamed:  # read as a stream: its first images, a random sample (data/shards.py)
            items = [tuple(map(torch.from_numpy, item)) for item in dataset.first(count)]
            items = [items[i % len(items)] for i in range(count)]
        else:
            items = [dataset[int(i)] for i in order]
        self.reals = to_float(torch.stack([img for img, _ in items]))
        self.labels = torch.stack([label for _, label in items]).to(device)
        self.z = torch.randn([count, cfg.model.z_dim], generator=gen).to(device)
        # no gradients are kept, so small images go in larger chunks than a training micro-batch: fewer calls
        self.batch = max(cfg.schedule.batch_gpu, GRID_CHUNK_PIXELS // (height * width))

    def save_reals(self, path: Path) -> np.ndarray:
        return save_grid(self.reals, path, self.columns)

    @torch.no_grad()
    def save_fakes(self, G: torch.nn.Module, path: Path) -> np.ndarray:
        chunks = zip(self.z.split(self.batch), self.labels.split(self.batch), strict=True)
        images = torch.cat([G(z, c, noise_mode="const").cpu() for z, c in chunks])
        return save_grid(images, path, self.columns)
