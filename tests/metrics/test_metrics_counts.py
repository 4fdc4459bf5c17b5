"""Counts and sizes a metric cannot work with are user errors (exit 2, one line), not assertion tracebacks."""

from pathlib import Path

import numpy as np
import PIL.Image
import pytest
import torch
from click.testing import CliRunner

from ganforge.cli import main
from ganforge.metrics import compute_metric
from ganforge.metrics.inception import load_inception
from ganforge.metrics.kid import kernel_inception_distance
from ganforge.metrics.pr import precision_recall
from ganforge.metrics.registry import METRICS


def _folder(path, count: int, size: int):
    path.mkdir()
    for i in range(count):
        pixels = np.random.default_rng(i).integers(0, 256, (size, size, 3), dtype=np.uint8)
        PIL.Image.fromarray(pixels).save(path / f"{i}.png")
    return str(path)


@pytest.mark.parametrize(
    "metric, count, size, message",
    [
        ("pr50k3_full", 3, 8, "error: pr: 3 images, but k=3 nearest neighbours need more than 3 in each set"),
        ("kid50k_full", 1, 8, "error: kid: needs at least 2 real and 2 fake images"),
        ("swd16k", 4, 4, "size 4x4: a side is not a power of two from 8 to 1024"),  # read first
    ],
)
def test_too_few_or_too_small_images_are_user_errors(tmp_path, metric, count, size, message):
    real, fake = _folder(tmp_path / "real", count, size), _folder(tmp_path / "fake", count, size)
    args = ["metrics", "--real", real, "--fake", fake, "--metrics", metric, "--workers", "0"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def test_the_fewest_images_kid_and_pr_take_are_measured_and_kid_is_the_mmd2_of_their_inception_features(tmp_path):
    """KID with 2 images a side and PR with k + 1 = 4 are measured (one fewer is refused, above); KID is the MMD² of
    the images' Inception features, over the published protocol's 100 subsets of up to 1,000 (Binkowski et al.
    2018; with fewer images than a subset, every subset is all of them)."""
    assert dict(METRICS["kid50k_full"].kwargs) == {"num_subsets": 100, "subset_size": 1000}
    real, fake = _folder(tmp_path / "real", 4, 8), _folder(tmp_path / "fake", 4, 8)
    options = dict(real=real, fake=fake, device="cpu", progress=False, num_real=4, num_gen=4)
    alike = tmp_path / "alike"  # two of the reals and two flat fakes a shade apart: precision and recall differ
    alike.mkdir()
    for index in range(2):
        (alike / f"{index}.png").write_bytes((Path(real) / f"{index}.png").read_bytes())
        PIL.Image.fromarray(np.full((8, 8, 3), 100 + index, np.uint8)).save(alike / f"{index + 2}.png")
    pr = compute_metric("pr50k3_full", **dict(options, fake=str(alike)))
    two = dict(options, real=_folder(tmp_path / "real2", 2, 8), fake=_folder(tmp_path / "fake2", 2, 8), num_real=2,
               num_gen=2)  # fmt: skip
    assert compute_metric("kid50k_full", **two)["num_fake"] == 2
    record = compute_metric("kid50k_full", **options, seed=3)
    network = load_inception(None, torch.device("cpu"))
    features = [network(_pixels(folder)) for folder in (real, fake)]
    mean, std = kernel_inception_distance(*features, num_subsets=100, subset_size=1000, seed=3)
    assert record["results"]["kid50k_full"] == pytest.approx(mean, rel=1e-5, abs=1e-9)
    assert record["std"] == pytest.approx(std, rel=1e-5, abs=1e-9)
    precision, recall = precision_recall(features[0], network(_pixels(str(alike))), k=3)  # fakes in the reals'
    assert (pr["results"]["pr50k3_full_precision"], pr["results"]["pr50k3_full_recall"]) == (precision, recall)
    assert pr["num_fake"] == 4 and precision != recall


def _pixels(folder: str) -> torch.Tensor:
    paths = sorted(Path(folder).iterdir(), key=lambda p: int(p.stem))
    return torch.stack([torch.from_numpy(np.array(PIL.Image.open(p))).permute(2, 0, 1) for p in paths])
