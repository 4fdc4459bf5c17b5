"""The order in which training sees images: a pure function of (seed, global position).

Global position p falls in pass p // size at offset p % size; the dataset index there is entry p % size of a
permutation seeded by (seed, pass). Rank r of W takes positions p with p % W == r, so with a global batch B the
ranks' micro-batches of one step together cover exactly positions [k*B, (k+1)*B), and resuming at any position
continues the identical sequence, whatever the number of ranks or DataLoader workers.
"""

import numpy as np
import torch


def permutation(size: int, seed: int, epoch: int) -> np.ndarray:
    """The shuffle of pass `epoch`; numpy's seed sequence keeps (seed, epoch) pairs independent streams."""
    return np.random.default_rng([seed, epoch]).permutation(size)


class InfiniteSampler(torch.utils.data.Sampler):
    """Yields dataset indices forever for one rank, starting at the first global position >= `start` it owns."""

    def __init__(self, size: int, seed: int = 0, rank: int = 0, world_size: int = 1, start: int = 0):
        assert size > 0 and world_size > 0 and 0 <= rank < world_size and start >= 0
        self.size, self.seed, self.rank, self.world_size, self.start = size, seed, rank, world_size, start

    def __iter__(self):
        position = self.start + (self.rank - self.start) % self.world_size
        epoch, order = -1, None
        while True:
            if position // self.size != epoch:
                epoch = position // self.size
                order = permutation(self.size, self.seed, epoch)
            yield int(order[position % self.size])
            position += self.world_size
