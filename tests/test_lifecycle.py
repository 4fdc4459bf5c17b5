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


_MONITOR_THREAD = textwrap.dedent(
    """
    import threading
    import types
    import torch
    from ganforge import dist
    from ganforge.monitor.sampler import THREAD_NAME
    from ganforge.monitor.telemetry import Monitor

    def monitor_threads():
        return [t.name for t in threading.enumerate() if t.name == THREAD_NAME]

    dist.init("cpu")
    cfg = types.SimpleNamespace(run=types.SimpleNamespace(monitor_interval=0.01, profile=0, profile_detail=False),
                                schedule=types.SimpleNamespace(tick_kimg=1.0), world_size=dist.world_size())
    for fails in (False, True):
        try:
            with Monitor(cfg, torch.device("cpu"), None, 0, print) as monitor:
                running = monitor_threads()
                stats = monitor.tick({})  # collective: every rank's telemetry reaches every rank
                if fails:
                    raise RuntimeError("a failing step")
        except RuntimeError:
            pass
        print(f"rank {dist.rank()} fails={fails} running={running} cpu={'CPU/util' in stats} left={monitor_threads()}")
    dist.barrier()
    dist.shutdown()
    """
)


def test_the_telemetry_thread_runs_on_local_rank_0_only_and_never_outlives_its_run(run_ranks):
    """A sampler thread left running would be torn down during interpreter exit, like gloo's; it is stopped and
    joined when the run ends, however it ends."""
    for rank, out in enumerate(run_ranks(_MONITOR_THREAD)):
        running = ["ganforge-monitor"] if rank == 0 else []
        for fails in (False, True):
            assert f"rank {rank} fails={fails} running={running} cpu=True left=[]" in out, out
