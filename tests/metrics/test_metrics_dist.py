"""Two gloo processes give the same feature statistics and SWD as one (uneven shards: 3 images on 2 ranks)."""

import json
import textwrap

import numpy as np
import PIL.Image
import pytest

from ganforge.metrics import compute_metrics

_WORKER = textwrap.dedent(
    """
    import json, sys
    import torch
    from ganforge import dist
    from ganforge.metrics import compute_metrics
    from ganforge.metrics.features import FeatureStats

    dist.init("cpu")
    rows = torch.arange(5 * 3, dtype=torch.float32).view(5, 3)
    stats = FeatureStats(3, capture_all=True, device="cpu")
    stats.append(rows[dist.rank() :: dist.world_size()])
    stats.finalize(5)
    assert torch.equal(stats.all, rows), stats.all
    assert torch.equal(stats.sum, rows.double().sum(0)) and stats.count == 5
    real, fake, names = sys.argv[1], sys.argv[2], sys.argv[3].split(",")
    options = dict(num_gen=3, progress=False, batch_size=2, cache_dir=sys.argv[4])
    records = compute_metrics(names, real=real, fake=fake, **options)
    print("RESULT", json.dumps([r["results"] for r in records]))
    dist.shutdown()
    """
)


def _folder(path, seed):
    rng = np.random.default_rng(seed)
    path.mkdir()
    for i in range(3):
        PIL.Image.fromarray(rng.integers(0, 256, (16, 16, 3)).astype(np.uint8)).save(path / f"{i}.png")
    return path


def test_two_ranks_match_one_process(tmp_path, run_ranks):
    real, fake = _folder(tmp_path / "real", 0), _folder(tmp_path / "fake", 1)
    # SWD needs no Inception network (too slow for this test on a CPU); the feature gathering is checked in _WORKER.
    names = "swd16k"
    args = (str(real), str(fake), names, str(tmp_path / "cache2"))
    outputs = run_ranks(_WORKER, *args)
    results = [json.loads(line.split(" ", 1)[1]) for out in outputs for line in out.splitlines() if "RESULT" in line]
    records = compute_metrics(names.split(","), real=real, fake=fake, num_gen=3, progress=False, cache_dir=tmp_path)
    assert len(results) == 2 and results[0] == results[1]
    for two_ranks, one in zip(results[0], records, strict=True):
        assert two_ranks == pytest.approx(one["results"], rel=1e-5)
