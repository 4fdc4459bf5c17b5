import itertools

import numpy as np
import pytest

from ganforge.data import InfiniteSampler


def take(sampler, count):
    return list(itertools.islice(iter(sampler), count))


def test_same_seed_same_order_and_each_pass_is_a_fresh_permutation():
    first = take(InfiniteSampler(10, seed=3), 30)
    assert first == take(InfiniteSampler(10, seed=3), 30)
    assert first != take(InfiniteSampler(10, seed=4), 30)
    passes = [first[i : i + 10] for i in (0, 10, 20)]
    assert all(sorted(p) == list(range(10)) for p in passes)
    assert passes[0] != passes[1] != passes[2]


@pytest.mark.parametrize("world_size", [2, 3])
def test_rank_shards_are_disjoint_and_cover_the_global_sequence(world_size):
    global_order = take(InfiniteSampler(7, seed=1), 42)
    count = 42 // world_size
    shards = [take(InfiniteSampler(7, seed=1, rank=r, world_size=world_size), count) for r in range(world_size)]
    # Rank r's j-th sample is global position r + j*W: positions are disjoint and together cover 0..41.
    positions = sorted(r + j * world_size for r in range(world_size) for j in range(42 // world_size))
    assert positions == list(range(42))
    for rank, shard in enumerate(shards):
        assert shard == global_order[rank::world_size]


@pytest.mark.parametrize(("start", "world_size"), [(0, 1), (5, 1), (13, 1), (4, 2), (12, 3)])
def test_starting_at_i_equals_skipping_i(start, world_size):
    global_order = take(InfiniteSampler(6, seed=9), 60)
    for rank in range(world_size):
        resumed = take(InfiniteSampler(6, seed=9, rank=rank, world_size=world_size, start=start), 10)
        assert resumed == global_order[start + rank :: world_size][:10]


def test_global_batches_match_between_one_and_two_ranks():
    batch, world_size = 4, 2
    single = np.array(take(InfiniteSampler(11, seed=2), 5 * batch)).reshape(5, batch)
    shards = [take(InfiniteSampler(11, seed=2, rank=r, world_size=world_size), 5 * batch // 2) for r in range(2)]
    for step in range(5):
        union = shards[0][step * 2 : step * 2 + 2] + shards[1][step * 2 : step * 2 + 2]
        assert sorted(union) == sorted(single[step])
