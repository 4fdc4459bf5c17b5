"""ADA across two gloo ranks: r_t is the mean sign over every rank's reals, so p moves alike on every rank, and the
state between steps (what rank 0 checkpoints) is the same on both."""

import json
import textwrap

_WORKER = textwrap.dedent(
    """
    import json
    import torch
    from ganforge import dist
    from ganforge.augment.pipe import AdaptiveAugment, AugmentPipe

    dist.init("cpu")
    ada, pipe = AdaptiveAugment(target=0.5, speed_kimg=0.16, interval=2), AugmentPipe("bgc", p=0.5)
    # Rank 0 alone would say r_t = 1 (raise p), rank 1 alone r_t = -0.5 (lower it); together r_t = 0.25 < 0.5.
    signs = [[1.0, 1.0, 1.0, 1.0], [1.0, -1.0, -1.0, -1.0]][dist.rank()]
    ada.accumulate(torch.tensor(signs)[:, None])
    ada.update(pipe, 8)
    middle = {k: v.tolist() if isinstance(v, torch.Tensor) else v for k, v in ada.state_dict().items()}
    ada.accumulate(torch.tensor(signs)[:, None])
    ada.update(pipe, 8)
    print("RESULT", json.dumps({"middle": middle, "p": pipe.p.item(), "rt": ada.stats(pipe)["rt"]}))
    dist.barrier()
    dist.shutdown()
    """
)


def test_ada_pools_signs_over_ranks_and_keeps_one_state(run_ranks):
    results = [json.loads(line.split(" ", 1)[1]) for out in run_ranks(_WORKER) for line in out.splitlines()
               if line.startswith("RESULT")]  # fmt: skip
    assert len(results) == 2 and results[0] == results[1]
    assert results[0]["middle"]["sign_sum"] == 2.0 and results[0]["middle"]["count"] == 8.0
    assert results[0]["rt"] == 0.25
    assert abs(results[0]["p"] - (0.5 - 16 / 160)) < 1e-6  # 16 images at 0.16 kimg per unit of p, downwards
