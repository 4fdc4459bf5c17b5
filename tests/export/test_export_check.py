"""The check's figures against hand computations: pixel differences and PSNR of a known perturbation, FID and KID
through the metrics' functions on the same features, the batches a model is run with, and which figures fail."""

import copy
import dataclasses
import math

import numpy as np
import pytest
import torch
from export_helpers import ARCH, PixelFeatures

from ganforge.export import check
from ganforge.export.wrapper import DeployableGenerator
from ganforge.metrics import inception
from ganforge.metrics.kid import kernel_inception_distance
from ganforge.nets import Generator


class Perturbed:
    """The eager module's output with `delta` added to pixel [0, 0, 0, 0] of every batch (one uint8 level when the
    output is uint8)."""

    runtime = "test"

    def __init__(self, module, delta):
        self.module, self.delta = module, delta

    def __call__(self, *inputs):
        with torch.no_grad():
            out = self.module(*inputs).clone()
        out[0, 0, 0, 0] += 1 if out.dtype == torch.uint8 else self.delta
        return out


@pytest.fixture(scope="module")
def generator():
    torch.manual_seed(0)
    return Generator(**ARCH).eval()


def test_batches_cover_the_count_starting_with_a_single_image(generator):
    dynamic, fixed = DeployableGenerator(generator), DeployableGenerator(generator, batch=5)
    assert check.batch_sizes(dynamic, 1) == [1] and check.batch_sizes(dynamic, 17) == [1, 16]
    assert check.batch_sizes(dynamic, 40) == [1, 16, 16, 7] and check.batch_sizes(fixed, 12) == [5, 5, 5]


@pytest.mark.parametrize("uint8", [False, True])
def test_pixel_figures_of_a_known_difference(generator, uint8):
    module = DeployableGenerator(generator, uint8=uint8)
    figures = check.run_check(module, Perturbed(module, 0.25), pixel_images=20, fid_images=0, seed=3)
    delta = 2 / 255 if uint8 else 0.25
    batches, values = 3, 20 * 3 * 16 * 16  # batches 1, 16, 3: one changed pixel each
    assert figures.images == 20 and figures.batch_sizes == (1, 16, 3) and figures.fid is None
    assert figures.max_abs_diff == pytest.approx(delta)
    assert figures.mean_abs_diff == pytest.approx(batches * delta / values)
    assert figures.psnr_db == pytest.approx(10 * math.log10(4 / (batches * delta**2 / values)))


def test_fid_and_kid_compare_the_two_image_sets_of_the_same_latents(generator, monkeypatch):
    monkeypatch.setattr(inception, "load_inception", lambda *args, **kwargs: PixelFeatures())
    # The Frechet distance itself is tested with the metrics (and runs for real in the int8 export test); here it
    # records what it is given, which skips two 2048x2048 eigendecompositions per call.
    given = []
    monkeypatch.setattr(check, "frechet_distance", lambda *moments: given.append(moments) or 1.5)
    module = DeployableGenerator(generator)
    figures = check.run_check(module, Perturbed(module, 50.0), pixel_images=4, fid_images=6, seed=1)
    assert (figures.fid, figures.fid_images, figures.images) == (1.5, 6, 4)
    # by hand: the same six inputs (batches of 1 and 5 from one generator), eager and perturbed, the same features
    draws = torch.Generator().manual_seed(1)
    with torch.no_grad():
        eager = torch.cat([module(*module.example_inputs(size, draws)) for size in (1, 5)])
    exported = eager.clone()
    exported[[0, 1], 0, 0, 0] += 50.0  # the first pixel of each batch
    features = [PixelFeatures()(check.as_nchw_uint8(x)).double().numpy() for x in (eager, exported)]
    ((mu1, sigma1, mu2, sigma2),) = given
    for (mu, sigma), f in zip(((mu1, sigma1), (mu2, sigma2)), features, strict=True):
        assert np.allclose(mu, f.mean(0), atol=1e-4) and np.allclose(sigma, np.cov(f, rowvar=False), atol=1e-3)
    assert not np.allclose(mu1, mu2)
    # KID of independent halves: eager images 0, 2, 4 against exported images 1, 3, 5
    halves = [torch.from_numpy(f[i::2]) for f, i in zip(features, (0, 1), strict=True)]
    assert figures.kid == pytest.approx(kernel_inception_distance(*halves, 100, 1000, 1)[0], rel=1e-5)


def test_problems_name_each_broken_limit_and_treat_nan_as_broken():
    figures = check.Figures(8, 0.01, 0.001, 40.0, 8, 2.5, 0.01, (1, 7), "test")
    assert check.problems(figures, max_abs_diff=0.1, max_fid_delta=3.0) == []
    assert check.problems(figures, max_abs_diff=0.001, max_fid_delta=1.0) == [
        "max abs pixel difference 0.01 > --max-abs-diff 0.001",
        "FID between eager and exported images 2.5 > --max-fid-delta 1",
    ]
    broken = dataclasses.replace(figures, max_abs_diff=math.nan, fid=math.nan)
    assert len(check.problems(broken, max_abs_diff=None, max_fid_delta=1.0)) == 1
    assert len(check.problems(broken, max_abs_diff=1.0, max_fid_delta=1.0)) == 2


@pytest.mark.cuda
def test_on_a_gpu_the_eager_reference_runs_there_in_ieee_fp32(generator):
    """The fused grouped convolution on CUDA against the CPU's shared-weight one: the same linear map, so an fp32
    export checked there keeps the fp32 limit."""
    module = DeployableGenerator(copy.deepcopy(generator))

    def on_cpu(*inputs):
        with torch.no_grad():
            return DeployableGenerator(generator)(*inputs)

    on_cpu.runtime = "cpu"
    figures = check.run_check(module, on_cpu, pixel_images=17, fid_images=0, seed=0)
    assert next(module.parameters()).device.type == "cuda" and figures.max_abs_diff < 1e-4
