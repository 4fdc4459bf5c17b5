"""The check's figures against hand computations: pixel differences and PSNR of a known perturbation, the FID delta
and KID through the metrics' functions on the same features, the batches a model is run with, and which figures
fail."""

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
    figures = check.Check(module, pixel_images=20, fid_images=0, seed=3).run(Perturbed(module, 0.25))
    delta = 2 / 255 if uint8 else 0.25
    batches, values = 3, 20 * 3 * 16 * 16  # batches 1, 16, 3: one changed pixel each
    assert figures.images == 20 and figures.batch_sizes == (1, 16, 3) and figures.fid_delta is None
    assert figures.max_abs_diff == pytest.approx(delta)
    assert figures.mean_abs_diff == pytest.approx(batches * delta / values)
    assert figures.psnr_db == pytest.approx(10 * math.log10(4 / (batches * delta**2 / values)))


def test_the_fid_delta_and_kid_compare_with_eager_images_of_other_latents_measured_once(generator, monkeypatch):
    monkeypatch.setattr(inception, "load_inception", lambda *args, **kwargs: PixelFeatures())
    # The Frechet distance itself is tested with the metrics (and runs for real in the int8 export test); here it
    # records what it is given and answers in turn, which skips two 2048x2048 eigendecompositions per call.
    given, answers = [], iter([1.5, 4.0, 2.0])
    monkeypatch.setattr(check, "frechet_distance", lambda *moments: given.append(moments) or next(answers))
    module = DeployableGenerator(generator)
    checker = check.Check(module, pixel_images=4, fid_images=6, seed=1)
    figures = checker.run(Perturbed(module, 50.0))
    assert (figures.fid_eager, figures.fid_exported, figures.fid_delta) == (1.5, 4.0, 2.5)
    assert (figures.fid_images, figures.images) == (6, 4)
    # by hand: A, the six inputs of the check (batches of 1 and 5 from one generator), eager and perturbed; B, six
    # more inputs drawn after them, eager
    draws = torch.Generator().manual_seed(1)
    with torch.no_grad():
        eager, other = (torch.cat([module(*module.example_inputs(size, draws)) for size in (1, 5)]) for _ in "AB")
    exported = eager.clone()
    exported[[0, 1], 0, 0, 0] += 50.0  # the first pixel of each batch
    features = [PixelFeatures()(check.as_nchw_uint8(x)).double().numpy() for x in (other, eager, exported)]
    moments = [(f.mean(0), np.cov(f, rowvar=False)) for f in features]
    for call, (first, second) in zip(given, ((0, 1), (0, 2)), strict=True):  # FID(B, A), then FID(B, exported)
        for (mu, sigma), (want_mu, want_sigma) in zip((call[:2], call[2:]), (moments[first], moments[second]),
                                                      strict=True):  # fmt: skip
            assert np.allclose(mu, want_mu, atol=1e-4) and np.allclose(sigma, want_sigma, atol=1e-3)
    # KID: unbiased, of two independent sets: B against the exported images
    sets = [torch.from_numpy(features[i]) for i in (0, 2)]
    assert figures.kid == pytest.approx(kernel_inception_distance(*sets, 100, 1000, 1)[0], rel=1e-5)
    # A second candidate is measured against the same eager side: one more FID, FID(B, A) as before.
    again = checker.run(Perturbed(module, 50.0))
    assert len(given) == 3 and (again.fid_eager, again.fid_exported, again.fid_delta) == (1.5, 2.0, 0.5)


def test_problems_name_each_broken_limit_and_treat_nan_as_broken():
    figures = check.Figures(8, 0.01, 0.001, 40.0, 8, 2.5, 0.01, (1, 7), "test")
    assert check.problems(figures, max_abs_diff=0.1, max_fid_delta=3.0) == []
    figures = dataclasses.replace(figures, fid_exported=12.5, fid_eager=10.0)
    assert check.problems(figures, max_abs_diff=0.001, max_fid_delta=1.0) == [
        "max abs pixel difference 0.01 > --max-abs-diff 0.001",
        "the exported images' FID is 2.5 above the eager images' > --max-fid-delta 1 (FID to 8 eager images of "
        "other latents: exported 12.5, eager 10)",
    ]
    broken = dataclasses.replace(figures, max_abs_diff=math.nan, fid_delta=math.nan)
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
    figures = check.Check(module, pixel_images=17, fid_images=0, seed=0).run(on_cpu)
    assert next(module.parameters()).device.type == "cuda" and figures.max_abs_diff < 1e-4
