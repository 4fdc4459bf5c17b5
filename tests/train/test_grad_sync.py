"""Gradient sums over ranks: the overlapped bucketed all-reduce equals the flat one and the exact sum of every rank's
gradients, starts buckets during backward, and waits for a parameter that got no gradient in the last backward."""

import torch
from train_helpers import tiny_options

from ganforge.config import maths_differences
from ganforge.train import resolve
from ganforge.train.build import build
from ganforge.train.grad_sync import buckets_of
from ganforge.train.resolver import DatasetFacts, Facts

# Each rank: a small net; two micro-batches (the second leaves `late` without a gradient, `unused` never gets one);
# gradients summed over ranks by GradientSync with the given bucket size, compared with the sum of every rank's own
# gradients, which each rank can compute alone because the data is seeded by rank.
TWO_RANKS = """
import sys, torch
from ganforge import dist
from ganforge.train.grad_sync import GradientSync

def net():
    torch.manual_seed(0)
    return torch.nn.ModuleDict({"unused": torch.nn.Linear(2, 2), "a": torch.nn.Linear(6, 5),
                                "late": torch.nn.Linear(6, 5), "b": torch.nn.Linear(5, 3)})

def backward(m, rank, micro_batch):
    x = torch.randn(4, 6, generator=torch.Generator().manual_seed(10 * rank + micro_batch))
    h = m["a"](x) + (m["late"](x) if micro_batch == 0 else 0)
    (m["b"](h).square().sum() * (rank + 1)).backward()

dist.init("cpu")
expected = net()
for rank in range(dist.world_size()):
    for mb in range(2):
        backward(expected, rank, mb)
results = []
for bucket_mb in (0.0, 1e-6):  # flat; a bucket per parameter
    m = net()
    sync = GradientSync(list(m.parameters()), bucket_mb)
    backward(m, dist.rank(), 0)
    sync.arm()
    backward(m, dist.rank(), 1)
    started = len(sync._in_flight)
    sync.finish()
    for (name, p), q in zip(m.named_parameters(), expected.parameters()):
        want = torch.zeros_like(p) if q.grad is None else q.grad
        torch.testing.assert_close(p.grad, want, rtol=1e-6, atol=1e-6, msg=name)
    results.append((started, len(sync.buckets), [p.grad.clone() for p in m.parameters()]))
(flat_started, flat_buckets, flat), (started, buckets, overlapped) = results
assert flat_started == 0 and flat_buckets == 1 and buckets == 8, (flat_started, flat_buckets, buckets)
assert started == 2, started  # b's two buckets went out during backward; `late` held back the rest
for a, b in zip(flat, overlapped):
    assert torch.equal(a, b)
dist.shutdown()
print("ok", started)
"""


def test_overlapped_buckets_equal_the_flat_all_reduce_and_the_exact_sum(run_ranks):
    outputs = run_ranks(TWO_RANKS)
    assert all(out.strip().splitlines()[-1].startswith("ok ") for out in outputs), outputs


def test_buckets_run_backwards_from_the_last_parameter_and_reach_the_size():
    params = [torch.nn.Parameter(torch.zeros(n)) for n in (4, 1, 2, 8)]  # float32: 16, 4, 8, 32 bytes
    assert buckets_of(params, 12) == [[3], [2, 1], [0]]
    assert buckets_of(params, 0) == [[3, 2, 1, 0]]


def test_the_bucket_flag_reaches_the_phases_and_is_no_change_of_the_maths(tmp_path):
    facts = Facts(DatasetFacts(8, 1, 0, "squares"), 1, "cpu")
    default = resolve(tiny_options(tmp_path / "d", tmp_path / "o"), facts)
    small = resolve(tiny_options(tmp_path / "d", tmp_path / "o", allreduce_bucket_mb=0.001), facts)
    assert small.runtime.allreduce_bucket_mb == 0.001 and default.runtime.allreduce_bucket_mb == 25
    assert maths_differences(default.to_dict(), small.to_dict()) == []  # so a resume may change it
    buckets = [[len(p.network.sync.buckets) for p in build(c, torch.device("cpu"))[1]] for c in (default, small)]
    assert buckets[0] == [1] * len(buckets[0]) and min(buckets[1]) > 1  # 1 KiB buckets: the tiny nets need several
