"""Batches for training: uint8 batches in the sampler's order, read ahead of the training step; a prefetcher moves the
next batch to the device while the current one trains, and converts it to float in [-1, 1] there.

Who reads depends on the format. Zips and folders are decoded by DataLoader worker processes (`workers` of them).
The fast format needs no decoding, and copying out of its memory map in this process is several times faster than
receiving the same batches from workers, whose every batch crosses processes in fresh shared-memory pages
(benchmarks/data_throughput.py), so one thread of this process reads it `PREFETCH_BATCHES` batches ahead and
`workers` does not apply. Either way the batches are the same, in the same order. Shards are streamed
(`ganforge.data.stream`): a thread of this process reads them in order, `workers` threads decode.

Worker processes leave SIGTERM and SIGINT to this process (`WorkerLoader`): a signal sent to the whole process group
must reach the training loop, which checkpoints, and not kill a worker under it.

The uint8 -> float conversion happens on the device (4x less host-to-device traffic than float32). Off the CPU it is a
lookup in the 256 values the CPU computes, so every device gives identical numbers: the same expression would not
(CUDA divides a tensor by a Python number as a multiplication by its reciprocal, which differs from the CPU's true
division in the last bit: for 111 of the 256 bytes when the reciprocal product is done on a CPU; the batches differed
on an H200).
"""

import contextlib

import torch

from ganforge import preempt
from ganforge.data import stream
from ganforge.data.readahead import ReadAhead
from ganforge.data.sampler import InfiniteSampler
from ganforge.errors import UserError, carried_problems
from ganforge.urls import public_url

# A reader that delivers nothing for this long is stuck (hung network filesystem, deadlock), not slow.
DEFAULT_TIMEOUT_S = 600.0
# Batches read ahead per reading process or thread: enough to absorb a slow read without holding much memory.
PREFETCH_BATCHES = 4
_WORKER_DIED = (
    "data loader: a DataLoader worker died ({error}). The usual cause is exhausted shared memory (/dev/shm): in "
    "Docker pass --shm-size=16g or --ipc=host (Kubernetes: mount an emptyDir with medium: Memory at /dev/shm), "
    "or use fewer --workers"
)
_TIMED_OUT = (
    "data loader: no batch from the workers for {seconds:.0f} s; the dataset storage is too slow or a worker hung. "
    "Copy the dataset to local disk, or use fewer --workers"
)
_READ_TIMED_OUT = (
    "data loader: no batch read from {path} for {seconds:.0f} s; the dataset storage is too slow or hung. Copy the "
    "dataset to local disk"
)


def to_float(images: torch.Tensor) -> torch.Tensor:
    """uint8 [0, 255] -> float32 [-1, 1], the generator's output range: each byte k becomes float32(k) / 127.5 - 1 as
    the CPU computes it (true division, then the subtraction); elsewhere by a lookup in the CPU's 256 values."""
    assert images.dtype == torch.uint8, images.dtype
    if images.device.type == "cpu":
        return images.to(torch.float32).div_(127.5).sub_(1)  # in place after the cast: the same two roundings
    table = to_float(torch.arange(256, dtype=torch.uint8))
    return table.to(images.device, non_blocking=True)[images.int()]


def to_uint8(images: torch.Tensor) -> torch.Tensor:
    """Generator output in [-1, 1] -> uint8 [0, 255], rounding (x * 127.5 + 128, truncated) as when saved as a PNG;
    the conversion used for sample grids and for the images the metrics see."""
    return (images.float() * 127.5 + 128).clamp(0, 255).to(torch.uint8)


def collate(samples):
    """Batches from ImageDataset.__getitems__ arrive stacked already; anything else is stacked the default way."""
    if isinstance(samples, tuple):
        return samples
    return torch.utils.data.default_collate(samples)


class WorkerLoader(torch.utils.data.DataLoader):
    """A DataLoader whose worker processes leave SIGTERM and SIGINT to this process (preempt.leave_signals_to_parent)
    and are started with both signals held, so that not even a worker's first instructions can be killed by a signal
    sent to the whole group. Use it for every DataLoader with workers; takes DataLoader's arguments but
    worker_init_fn."""

    def __init__(self, dataset, **kwargs):
        super().__init__(dataset, worker_init_fn=preempt.leave_signals_to_parent, **kwargs)

    def __iter__(self):
        with preempt.signals_held():  # workers (and DataLoader's pin-memory thread) start here
            return super().__iter__()


class DeviceLoader:
    """Iterator of (images float32 [N, C, H, W] in [-1, 1], labels float32 [N, label_dim]) on `device`.

    On CUDA, batch k+1 is copied on a side stream while the caller uses batch k; the caller's stream waits for the
    copy before it sees the tensors, and record_stream keeps the allocator from reusing their memory early.
    """

    def __init__(self, batches, device: torch.device, timeout_s: float):
        self._batches, self._device, self._timeout_s = iter(batches), device, timeout_s
        self._stream = torch.cuda.Stream(device) if device.type == "cuda" else None
        self._pending = None

    def __iter__(self):
        return self

    def __next__(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self._pending is None:
            self._pending = self._fetch()
        ready = self._pending
        if self._stream is not None:
            current = torch.cuda.current_stream(self._device)
            current.wait_stream(self._stream)
            for tensor in ready:
                tensor.record_stream(current)
        self._pending = self._fetch()
        return ready

    def _fetch(self) -> tuple[torch.Tensor, torch.Tensor]:
        images, labels = self._next_host_batch()
        context = torch.cuda.stream(self._stream) if self._stream is not None else contextlib.nullcontext()
        with context:
            images = to_float(images.to(self._device, non_blocking=True))
            labels = labels.to(self._device, non_blocking=True)
        return images, labels

    def _next_host_batch(self):
        try:
            return next(self._batches)
        except UserError as error:  # a bad sample; from a worker it arrives wrapped in the worker's traceback
            raise type(error)(*carried_problems(error)) from None  # its kind kept (a server's failure, a file's)
        except RuntimeError as error:
            # DataLoader reports dead and stuck workers only as RuntimeError text; these are its two phrasings.
            message = str(error)
            if "DataLoader worker" in message:
                raise UserError(_WORKER_DIED.format(error=message.splitlines()[0])) from error
            if "DataLoader timed out" in message:
                raise UserError(_TIMED_OUT.format(seconds=self._timeout_s)) from error
            raise


def reads_in_process(dataset) -> bool:
    """Whether make_loader reads `dataset` in this process (the fast format) rather than in DataLoader workers."""
    return getattr(dataset, "format", None) == "fast"


def host_loader(
    dataset,
    batch_per_rank: int,
    seed: int = 0,
    rank: int = 0,
    world_size: int = 1,
    start: int = 0,
    workers: int = 2,
    pin_memory: bool = False,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    in_process: bool | None = None,
):
    """The endless iterable of uint8 batches behind make_loader, optionally in pinned memory: read by `workers`
    persistent DataLoader processes (0: when asked, in this process), or, with `in_process`, by a read-ahead thread of
    this process over the same sampler and batching (see the module docstring). `in_process` None decides by the
    dataset's format."""
    if in_process is None:
        in_process = reads_in_process(dataset)
    workers = 0 if in_process else workers
    sampler = InfiniteSampler(len(dataset), seed=seed, rank=rank, world_size=world_size, start=start)
    loader = WorkerLoader(
        dataset,
        batch_size=batch_per_rank,
        sampler=sampler,
        collate_fn=collate,
        num_workers=workers,
        pin_memory=pin_memory,
        persistent_workers=workers > 0,
        prefetch_factor=PREFETCH_BATCHES if workers > 0 else None,
        timeout=timeout_s if workers > 0 else 0,
    )
    if not in_process:
        return loader
    stalled = _READ_TIMED_OUT.format(path=public_url(str(dataset.path)), seconds=timeout_s)
    return ReadAhead(loader, PREFETCH_BATCHES, timeout_s, stalled)


def make_loader(
    dataset,
    batch_per_rank: int,
    seed: int = 0,
    rank: int = 0,
    world_size: int = 1,
    start: int = 0,
    workers: int = 2,
    device: torch.device | str = "cpu",
    timeout_s: float = DEFAULT_TIMEOUT_S,
    origin: int = 0,
    shuffle_buffer: int = stream.DEFAULT_BUFFER,
) -> DeviceLoader:
    """An endless iterator of this rank's batches of `batch_per_rank` images (its share of a global batch, all of its
    micro-batches together), beginning at global image position `start`.

    Zips and folders are read by `workers` persistent DataLoader processes, the fast format by a thread of this
    process (`workers` does not apply), shards by a thread with `workers` decoding threads; batches land in pinned
    memory when the device is CUDA. The batch order depends only on (seed, start, rank, world_size, batch_per_rank)
    and, for shards, the stream's `origin` (the image count where this world size began) and `shuffle_buffer`; never
    on `workers` or on who reads.
    """
    device = torch.device(device)
    pin = device.type == "cuda"
    if getattr(dataset, "streamed", False):  # any other torch Dataset is read by index
        assert (start - origin) % world_size == 0 and start >= origin, (start, origin, world_size)
        items = stream.stream(dataset, seed, rank, world_size, origin, (start - origin) // world_size, shuffle_buffer)
        stalled = _READ_TIMED_OUT.format(path=public_url(str(dataset.path)), seconds=timeout_s)
        host = ReadAhead(
            stream.batches(dataset, batch_per_rank, items, workers, pin), PREFETCH_BATCHES, timeout_s, stalled
        )
        return DeviceLoader(host, device, timeout_s)
    batches = host_loader(dataset, batch_per_rank, seed, rank, world_size, start, workers, pin, timeout_s)
    return DeviceLoader(batches, device, timeout_s)
