"""Training batches streamed from a shard dataset, in an order that a resume re-creates exactly.

The order is a pure function of (seed, origin, world size, rank) and a position in the rank's stream, computed from
the index alone (each shard's image count), never from what was read:
- Pass e deals the shards, permuted by (seed, origin, e), to the ranks: rank r of W reads entries r, r + W, ... of the
  permutation, so ranks read disjoint shards and each needs at least one.
- Each shard's samples go through a shuffle buffer of `buffer` images, WebDataset's shuffle: once the buffer is full,
  each arriving sample takes the place of a randomly chosen one, which leaves; at the shard's end the rest leave in a
  random order. The choices depend only on the shard's count and a generator seeded by (seed, origin, e, r, slot),
  so a resume inside a shard reads the shard again from its start and drops, undecoded, what came before.
- With --mirror, each image is flipped left-right on a coin from the same generator (half of them, as the doubled
  dataset of the other formats has its images half flipped).

A rank's position is (images - origin) / W: every rank takes batch / W images a step. The origin is the image count
where the current world size began, 0 unless a resume changed it; checkpoints record it (ganforge.data.source).
"""

import numpy as np
import torch

from ganforge.data.pool import ordered_map
from ganforge.errors import UserError

DEFAULT_BUFFER = 1000  # images held per rank to shuffle a shard's stream (WebDataset's usual size)


def rank_shards(num_shards: int, seed: int, origin: int, epoch: int, rank: int, world: int) -> np.ndarray:
    """The shard numbers rank `rank` of `world` reads in pass `epoch`, in reading order."""
    return np.random.default_rng([seed, origin, epoch]).permutation(num_shards)[rank::world]


def shard_plan(count: int, buffer: int, rng: np.random.Generator) -> np.ndarray:
    """The order in which a shard's `count` samples (numbered by arrival) leave a shuffle buffer of `buffer` samples.

    Entry k < count - buffer leaves when sample k + buffer arrives; the last min(count, buffer) leave at the end."""
    held = list(range(min(count, buffer)))
    order = []
    for arrival, slot in zip(range(len(held), count), rng.integers(buffer, size=max(count - buffer, 0)), strict=True):
        order.append(held[slot])
        held[slot] = arrival
    return np.array(order + [held[i] for i in rng.permutation(len(held))], dtype=np.int64)


def locate(counts: list[int], seed: int, origin: int, rank: int, world: int, position: int) -> tuple[int, int, int]:
    """(pass, slot in the rank's shard list, offset in that shard's order) of the rank's stream `position`."""
    epoch = 0
    while True:
        sizes = np.array([counts[number] for number in rank_shards(len(counts), seed, origin, epoch, rank, world)])
        if position < sizes.sum():
            ends = np.cumsum(sizes)
            slot = int(np.searchsorted(ends, position, side="right"))
            return epoch, slot, position - int(ends[slot] - sizes[slot])
        position -= int(sizes.sum())
        epoch += 1


def _leaving(samples, order: np.ndarray, buffer: int, skip: int):
    """The shard's samples in `order` (a shard_plan), holding at most buffer + 1; the first `skip` are dropped."""
    held, leaving = {}, 0
    for arrival, sample in enumerate(samples):
        held[arrival] = sample
        if arrival >= buffer:
            leaving = yield from _leave(held, order, leaving, skip)
    while leaving < len(order):
        leaving = yield from _leave(held, order, leaving, skip)


def _leave(held: dict, order: np.ndarray, leaving: int, skip: int):
    sample = held.pop(int(order[leaving]))
    if leaving >= skip:
        yield leaving, sample
    return leaving + 1


def stream(dataset, seed: int, rank: int, world: int, origin: int, position: int, buffer: int = DEFAULT_BUFFER):
    """Endless (image bytes, label (see ShardDataset.samples), flip, shard location) for one rank, from its stream
    `position`."""
    counts = [shard["count"] for shard in dataset.shards]
    if len(counts) < world:
        raise UserError(
            f"--data: {len(counts)} shard(s) for {world} processes, and each process reads its own shards; rebuild "
            f"them smaller to have at least {world} (`ganforge dataset build ... --shard-size 256MB`)"
        )
    epoch, first_slot, skip = locate(counts, seed, origin, rank, world, position)
    while True:
        for slot, number in enumerate(rank_shards(len(counts), seed, origin, epoch, rank, world)):
            if slot < first_slot:
                continue
            rng = np.random.default_rng([seed, origin, epoch, rank, slot])
            order = shard_plan(counts[number], buffer, rng)
            flips = rng.integers(2, size=counts[number]) if dataset.mirror else np.zeros(counts[number], np.int64)
            where = dataset.where(int(number))
            for leaving, (image, label) in _leaving(dataset.samples(int(number)), order, buffer, skip):
                yield image, label, bool(flips[leaving]), where
            skip = 0
        epoch, first_slot = epoch + 1, 0


def batches(dataset, batch_per_rank: int, stream_items, workers: int, pin_memory: bool = False):
    """Endless (uint8 [N, C, H, W], float32 labels [N, label_dim]) batches from `stream_items` (see `stream`), the
    images decoded by `workers` threads (Pillow decodes without holding the GIL) in stream order; `pin_memory` for a
    CUDA device's faster copies."""

    def decode(item) -> tuple[np.ndarray, np.ndarray]:
        image, label, flip, where = item
        pixels = dataset.decode(image, where)
        return (pixels[:, :, ::-1] if flip else pixels), dataset.label_vector(label)

    decoded = ordered_map(decode, stream_items, workers, threads=True)
    shape = (batch_per_rank, dataset.channels, dataset.height, dataset.width)
    while True:
        images = torch.empty(shape, dtype=torch.uint8, pin_memory=pin_memory)
        labels = np.zeros((batch_per_rank, dataset.label_dim), dtype=np.float32)
        pixels = images.numpy()
        for slot in range(batch_per_rank):
            pixels[slot], labels[slot] = next(decoded)
        yield images, torch.from_numpy(labels)
