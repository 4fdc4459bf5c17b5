"""The process lifecycle around training: leaving the process group for good, and exiting 0 every time."""

import textwrap

_LEAVE_GROUP = textwrap.dedent(
    """
    import os
    import torch
    from ganforge import dist

    def gloo_threads():
        names = [open(f"/proc/self/task/{t}/comm").read().strip() for t in os.listdir("/proc/self/task")]
        return sorted(name for name in names if "gloo" in name)

    dist.init("cpu")
    assert gloo_threads(), "the test cannot see gloo's threads: it would pass whatever shutdown does"
    # The first optimiser imports torch._dynamo and with it torch.distributed.nn.functional, whose default
    # arguments evaluate group.WORLD: imported while the group exists, they would keep it alive past shutdown.
    torch.optim.Adam(torch.nn.Linear(2, 2).parameters())
    dist.all_reduce_sum_(torch.ones(3))
    rank = dist.rank()
    dist.barrier()
    dist.shutdown()
    print(f"rank {rank} gloo threads after shutdown: {gloo_threads()}")
    """
)


def test_shutdown_stops_every_gloo_thread(run_ranks):
    """Threads of a process group that outlive shutdown are torn down during interpreter exit, where gloo now and
    then aborts the process ("terminate called without an active exception") after all work succeeded."""
    for rank, out in enumerate(run_ranks(_LEAVE_GROUP)):
        assert f"rank {rank} gloo threads after shutdown: []" in out, out
