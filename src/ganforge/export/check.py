"""The check every export passes before it is written: the exported model against the eager generator on the same
inputs, by pixels (max and mean absolute difference, PSNR) and, for reduced precision, by FID and KID between the
two image sets through the standard Inception (`ganforge.metrics`: same network, same protocol).

Both image sets come from the same latents, classes and noise, so FID measures only what the export changed: an
export identical to the eager network scores 0 whatever the number of images. KID's unbiased estimator assumes two
independent samples; paired images would put each pair's self-similarity into its cross term (a large negative
value for identical sets), so KID compares the eager images of even positions with the exported images of odd
ones: about 0, within its sampling noise, for a faithful export.
"""

import dataclasses
import math

import torch

from ganforge.data.loader import to_uint8
from ganforge.export.wrapper import DeployableGenerator
from ganforge.metrics import inception
from ganforge.metrics.features import FeatureStats
from ganforge.metrics.fid import frechet_distance
from ganforge.metrics.kid import kernel_inception_distance
from ganforge.numerics import fp32_math
from ganforge.progress import Stage

CHECK_BATCH = 16
KID_SUBSETS = 100
KID_SUBSET_SIZE = 1000


@dataclasses.dataclass(frozen=True)
class Figures:
    """What the check measured. Pixel differences are on the generator's [-1, 1] scale (one uint8 level = 2/255);
    PSNR is over that range (peak-to-peak 2, the same as 255 for uint8 pixels); fid/kid are None when not run."""

    images: int
    max_abs_diff: float
    mean_abs_diff: float
    psnr_db: float
    fid_images: int
    fid: float | None
    kid: float | None
    batch_sizes: tuple[int, ...]
    runtime: str
    kid_subsets: int | None = None  # KID's mean is over this many random subsets ...
    kid_subset_size: int | None = None  # ... of this many feature vectors from each set


def batch_sizes(module: DeployableGenerator, count: int) -> list[int]:
    """Batches covering `count` images. A dynamic-batch model sees a single image first, then CHECK_BATCH at a time,
    so a size baked in by mistake is caught; a fixed-batch model sees only its batch (the count is rounded up)."""
    if module.batch != "batch":
        return [module.batch] * -(-count // module.batch)
    sizes = [1] + [CHECK_BATCH] * ((count - 1) // CHECK_BATCH)
    return sizes + ([(count - 1) % CHECK_BATCH] if (count - 1) % CHECK_BATCH else [])


def as_nchw_float(img: torch.Tensor) -> torch.Tensor:
    """Float [N, C, H, W] on the [-1, 1] scale from either output layout (uint8 [N, H, W, C] maps 0..255 to it)."""
    if img.dtype == torch.uint8:
        return (img.permute(0, 3, 1, 2).to(torch.float64) - 127.5) / 127.5
    return img.to(torch.float64)


def as_nchw_uint8(img: torch.Tensor) -> torch.Tensor:
    """uint8 [N, C, H, W], rounded as when saved (the form the metrics' Inception takes)."""
    return img.permute(0, 3, 1, 2) if img.dtype == torch.uint8 else to_uint8(img)


class _PixelStats:
    def __init__(self):
        self.count, self.max, self.abs_sum, self.sq_sum = 0, 0.0, 0.0, 0.0

    def add(self, eager: torch.Tensor, exported: torch.Tensor) -> None:
        diff = (as_nchw_float(exported) - as_nchw_float(eager)).abs()
        self.count += diff.numel()
        self.max = max(self.max, diff.max().item())
        self.abs_sum += diff.sum().item()
        self.sq_sum += diff.square().sum().item()

    def psnr(self) -> float:
        mse = self.sq_sum / self.count
        return math.inf if mse == 0 else 10 * math.log10(2.0**2 / mse)


def run_check(
    module: DeployableGenerator, runner, pixel_images: int, fid_images: int, seed: int, inception_path=None
) -> Figures:
    """Run eager `module` and the exported model (`runner`, same call signature, CPU tensors in and out) on the same
    generated inputs. The eager module (moved there) and Inception run on the GPU when there is one, in IEEE fp32.
    Shown as stages: the images (eager, exported, Inception features), then FID and KID."""
    assert pixel_images >= 1 and fid_images >= 0, (pixel_images, fid_images)
    generator = torch.Generator().manual_seed(seed)
    sizes = batch_sizes(module, max(pixel_images, fid_images))
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    module.to(device)
    pixels = _PixelStats()
    eager_stats, exported_stats = (FeatureStats(inception.FEATURE_DIM, True, device) for _ in range(2))
    features = " and their Inception features" if fid_images else ""
    with Stage(f"export: check on {sum(sizes)} eager and exported images{features}", total=sum(sizes)) as stage:
        net = _load_inception(inception_path, device, stage) if fid_images else None
        done = 0
        for size in sizes:
            eager, exported = _run_both(module, runner, module.example_inputs(size, generator), device, stage)
            if done < pixel_images:
                pixels.add(eager[: pixel_images - done], exported[: pixel_images - done])
            if net is not None and done < fid_images:
                with stage.part("Inception features"):
                    for stats, img in ((eager_stats, eager), (exported_stats, exported)):
                        stats.append(net(as_nchw_uint8(img[: fid_images - done]).to(device)))
            done += size
            stage.update(size)
    fid = kid = subsets = subset_size = None
    if net is not None:
        with Stage(f"export: FID and KID of {fid_images} image pairs"):
            fid, kid, subset_size = _fid_kid(eager_stats, exported_stats, fid_images, seed)
        subsets = KID_SUBSETS
    mean_abs_diff = pixels.abs_sum / pixels.count
    figures = (pixels.max, mean_abs_diff, pixels.psnr(), fid_images, fid, kid, tuple(sizes), runner.runtime)
    return Figures(pixel_images, *figures, subsets, subset_size)


def _load_inception(path, device, stage: Stage):
    with stage.part("loading Inception"):
        return inception.load_inception(path, device)


def _run_both(module: DeployableGenerator, runner, inputs: tuple, device, stage: Stage):
    """(eager, exported) images of the same inputs, each timed as a part of `stage`."""
    with stage.part("eager"), torch.no_grad(), fp32_math(tf32=False):
        eager = module(*(x.to(device) for x in inputs)).cpu()
    with stage.part("exported"):
        exported = runner(*inputs)
    assert exported.shape == eager.shape and exported.dtype == eager.dtype, (exported.shape, exported.dtype)
    return eager, exported


def _fid_kid(eager: FeatureStats, exported: FeatureStats, count: int, seed: int) -> tuple[float, float, int]:
    """FID, KID and the size of KID's subsets."""
    eager, exported = eager.finalize(count), exported.finalize(count)
    fid = frechet_distance(*eager.mean_cov(), *exported.mean_cov())
    even, odd = eager.all[0::2], exported.all[1::2]
    kid, _std = kernel_inception_distance(even, odd, KID_SUBSETS, KID_SUBSET_SIZE, seed)
    return fid, kid, min(KID_SUBSET_SIZE, len(even), len(odd))  # the subsets kernel_inception_distance draws


def problems(figures: Figures, max_abs_diff: float | None, max_fid_delta: float) -> list[str]:
    """Each limit the figures break, as a line naming the flag."""
    found = []
    if max_abs_diff is not None and not figures.max_abs_diff <= max_abs_diff:
        found.append(f"max abs pixel difference {figures.max_abs_diff:.3g} > --max-abs-diff {max_abs_diff:g}")
    if figures.fid is not None and not figures.fid <= max_fid_delta:
        found.append(f"FID between eager and exported images {figures.fid:.4g} > --max-fid-delta {max_fid_delta:g}")
    return found
