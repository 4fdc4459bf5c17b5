"""The replica check run at every snapshot finds a tensor that differs on one rank, and names it on every rank."""

import textwrap

_WORKER = textwrap.dedent(
    """
    import torch
    from ganforge import dist

    dist.init("cpu")
    tensors = {"same": torch.arange(6.0), "drifted": torch.ones(3), "also_same": torch.zeros(2, 2)}
    print("identical:", dist.check_replicas(tensors))
    if dist.rank() == 1:
        tensors["drifted"][2] += 1e-7  # one ulp-sized difference on one rank is enough
    print("after drift:", dist.check_replicas(tensors))
    dist.barrier()
    dist.shutdown()
    """
)


def test_check_replicas_names_the_tensor_one_rank_changed(run_ranks):
    for out in run_ranks(_WORKER):
        assert "identical: []" in out, out
        assert "after drift: ['drifted']" in out, out
