"""Every stage of `ganforge metrics` is shown while it runs: a bar on a terminal; a line when it starts and one with
its duration when it ends in a log or pipe (the images with the time split between reading or generating them and
their features, each metric and its own computation)."""

import re
import sys

import numpy as np
import PIL.Image
import pytest
import torch
from click.testing import CliRunner

from ganforge.cli import main
from ganforge.metrics import compute_metrics, fid, inception
from ganforge.nets import Generator
from progress_helpers import on_a_terminal


class _PixelFeatures(torch.nn.Module):
    """A cheap stand-in for Inception: a fixed random projection of the pixels to 2048 features."""

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = images.flatten(1).to(torch.float32) / 255
        return x @ torch.randn(x.shape[1], inception.FEATURE_DIM, generator=torch.Generator().manual_seed(0))


@pytest.fixture
def cheap_features(monkeypatch):
    """The stand-in for Inception and a constant Fréchet distance (the real ones have tests of their own)."""
    monkeypatch.setattr(inception, "load_inception", lambda *args, **kwargs: _PixelFeatures())
    monkeypatch.setattr(fid, "frechet_distance", lambda *moments: 2.5)


def _folder(path, count: int, seed: int):
    rng = np.random.default_rng(seed)
    path.mkdir()
    for i in range(count):
        PIL.Image.fromarray(rng.integers(0, 256, (16, 16, 3)).astype(np.uint8)).save(path / f"{i}.png")
    return path


def test_piped_metrics_write_a_line_as_each_stage_starts_and_ends(tmp_path, cheap_features):
    real, fake = _folder(tmp_path / "real", 6, 0), _folder(tmp_path / "fake", 6, 1)
    args = ["metrics", "--real", real, "--fake", fake, "--metrics", "kid50k_full,fid50k_full", "--workers", "0"]
    args += ["--num-gen", "6"]
    result = CliRunner().invoke(main, [*map(str, args), "--cache", str(tmp_path / "cache")])
    assert result.exit_code == 0, result.output
    *lines, kid_result, fid_result = result.stdout.splitlines()
    assert kid_result.startswith("kid50k_full ") and fid_result.startswith("fid50k_full 2.5 ")
    steps = [re.sub(r" in \d+\.\d s( \(.*\))?$", "", line) for line in lines]
    assert steps == [
        "metrics: kid50k_full: started",
        "metrics: 6 real images, Inception features: started",
        "metrics: 6 real images, Inception features: done",
        "metrics: 6 fake images, Inception features: started",
        "metrics: 6 fake images, Inception features: done",
        "metrics: KID over 100 subsets: started",
        "metrics: KID over 100 subsets: done",
        "metrics: kid50k_full: done",
        "metrics: fid50k_full: started",  # the features of both sets are this run's already
        "metrics: FID from the feature statistics: started",
        "metrics: FID from the feature statistics: done",
        "metrics: fid50k_full: done",
    ]
    times = r"\(reading \d+\.\d s, Inception features \d+\.\d s\)"
    assert re.search(times, lines[2]) and re.search(times, lines[4]), lines
    assert "\r" not in result.output and result.stderr == ""


def test_on_a_terminal_each_stage_of_the_work_has_a_bar(tmp_path, monkeypatch, cheap_features):
    torch.manual_seed(0)
    G = Generator(resolution=16, z_dim=8, w_dim=8, channel_base=64, channel_max=16, mapping_layers=2).eval()
    real = _folder(tmp_path / "real", 6, 0)
    on_a_terminal(monkeypatch)
    compute_metrics(["pr50k3_full"], generator=G, real=real, num_gen=6, workers=0, cache_dir=tmp_path / "cache")
    drawn = sys.stderr.getvalue()
    assert sys.stdout.getvalue() == "" and "\r" in drawn
    assert "metrics: 6 real images, Inception features: 100%" in drawn and "6/6" in drawn
    assert "metrics: 6 generated images, Inception features: 100%" in drawn
    assert "metrics: precision and recall from 3-nearest-neighbour balls: running for " in drawn
    assert "pr50k3_full" not in drawn  # the metric as a whole is the stages above, shown by their own bars
    monkeypatch.setattr(sys, "stderr", sys.stdout)
    compute_metrics(["pr50k3_full"], generator=G, real=real, num_gen=6, progress=False, cache_dir=tmp_path / "cache")
    assert sys.stdout.getvalue() == ""  # progress=False (a training run's own metrics): nothing at all
