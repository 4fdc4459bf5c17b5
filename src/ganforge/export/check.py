"""The check every export passes before it is written: the exported model against the eager generator on the same
inputs, by pixels (max and mean absolute difference, PSNR) and, for reduced precision, by how much it moves the FID,
through the standard Inception (`ganforge.metrics`: same network, same protocol).

The FID figure is a difference of two FIDs to one independent sample of the eager generator (B: other latents):
FID(B, exported images) - FID(B, eager images), the exported and the eager images made from the same latents (A). It
answers "how much worse would this model's FID be", and the estimator's large bias at small counts (both covariances
come from fewer images than Inception has dimensions) is nearly the same in both terms and cancels: on the demo's
32 px digits generator (benchmarks/quantize_gate_floor.py) the difference for one int8 model was 3.3, 3.2 and 3.1 at
128, 256 and 512 images (nested sets), while the FID between the paired sets themselves, which the check used
before, read 16, 13 and 10. Its spread over independent draws is what limits small counts: 3.2 +- 1.1 at 128. KID,
unbiased, compares B with the exported images. The eager side (A's and B's features, FID(B, A)) is measured once per
export, however many candidate models are checked against it.
"""

import contextlib
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

QUICK_FID_IMAGES = 128  # what the advice on a slow CPU check suggests


@dataclasses.dataclass(frozen=True)
class Figures:
    """What the check measured. Pixel differences are on the generator's [-1, 1] scale (one uint8 level = 2/255);
    PSNR is over that range (peak-to-peak 2, the same as 255 for uint8 pixels). The FID and KID figures are None
    when not run: fid_delta = fid_exported - fid_eager, each the FID to `fid_images` eager images of other latents."""

    images: int
    max_abs_diff: float
    mean_abs_diff: float
    psnr_db: float
    fid_images: int
    fid_delta: float | None
    kid: float | None
    batch_sizes: tuple[int, ...]
    runtime: str
    kid_subsets: int | None = None  # KID's mean is over this many random subsets ...
    kid_subset_size: int | None = None  # ... of this many feature vectors from each set
    fid_exported: float | None = None
    fid_eager: float | None = None


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


@dataclasses.dataclass(frozen=True)
class _Reference:
    """The eager side of the FID figures: the features of the eager images of other latents (B), and the FID between
    them and the eager images of the check's latents (A)."""

    other: FeatureStats
    fid_eager: float


class Check:
    """Candidate models, each `run(runner)` (same call signature as the eager `module`, CPU tensors in and out),
    against the eager generator on the same inputs drawn with `seed`: `pixel_images` for the pixel figures,
    `fid_images` (0: none) for the FID and KID figures. The eager module (moved there) and Inception run on the GPU
    when there is one, in IEEE fp32."""

    def __init__(self, module: DeployableGenerator, pixel_images: int, fid_images: int, seed: int, inception_path=None):
        assert pixel_images >= 1 and fid_images >= 0, (pixel_images, fid_images)
        self.module, self.pixel_images, self.fid_images, self.seed = module, pixel_images, fid_images, seed
        self.inception_path, self.net = inception_path, None
        self.device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        self.reference: _Reference | None = None

    def run(self, runner) -> Figures:
        """The figures of `runner`'s model, shown as stages: the images (eager, exported, Inception features), the
        reference images (the first time), then the FID and KID figures."""
        module, fid_images = self.module.to(self.device), self.fid_images
        generator = torch.Generator().manual_seed(self.seed)
        sizes = batch_sizes(module, max(self.pixel_images, fid_images))
        pixels = _PixelStats()
        exported_stats = FeatureStats(inception.FEATURE_DIM, True, self.device)  # every vector, for KID
        eager_stats = FeatureStats(inception.FEATURE_DIM, False, self.device)
        measure_eager = fid_images > 0 and self.reference is None
        features = " and their Inception features" if fid_images else ""
        what = f"export: check on {sum(sizes)} eager and exported images{features}"
        with Stage(what, total=sum(sizes), faster=self._faster()) as stage:
            net = self._inception(stage) if fid_images else None
            done = 0
            for size in sizes:
                eager, exported = _run_both(module, runner, module.example_inputs(size, generator), self.device, stage)
                if done < self.pixel_images:
                    pixels.add(eager[: self.pixel_images - done], exported[: self.pixel_images - done])
                if net is not None and done < fid_images:
                    with stage.part("Inception features"):
                        exported_stats.append(net(as_nchw_uint8(exported[: fid_images - done]).to(self.device)))
                        if measure_eager:
                            eager_stats.append(net(as_nchw_uint8(eager[: fid_images - done]).to(self.device)))
                done += size
                stage.update(size)
        if measure_eager:
            self.reference = self._measure_reference(eager_stats.finalize(fid_images), generator)
        distances = dict.fromkeys(("fid_delta", "kid", "kid_subsets", "kid_subset_size", "fid_exported", "fid_eager"))
        if fid_images:
            with Stage(f"export: FID and KID against {fid_images} eager images of other latents"):
                distances = self._distances(exported_stats.finalize(fid_images))
        pixel = {"max_abs_diff": pixels.max, "mean_abs_diff": pixels.abs_sum / pixels.count, "psnr_db": pixels.psnr()}
        shape = {"fid_images": fid_images, "batch_sizes": tuple(sizes), "runtime": runner.runtime}
        return Figures(self.pixel_images, **pixel, **shape, **distances)

    def _faster(self) -> str:
        """Advice for a check that turns out long on a CPU: a smaller FID set (the gate's statistics widen with it)."""
        if self.device.type != "cpu" or self.fid_images <= QUICK_FID_IMAGES:
            return ""
        return f"--check-fid {QUICK_FID_IMAGES} checks on fewer images (a looser FID gate), several times faster here"

    def image_features(self, images: torch.Tensor) -> torch.Tensor:
        """Inception features [N, 2048] (float64, CPU) of a model's output images, as the check computes them."""
        return self._inception()(as_nchw_uint8(images).to(self.device)).double().cpu()

    def _inception(self, stage: Stage | None = None):
        """The feature network, loaded on first use (timed as a part of `stage`, if given)."""
        if self.net is None:
            with stage.part("loading Inception") if stage else contextlib.nullcontext():
                self.net = inception.load_inception(self.inception_path, self.device)
        return self.net

    def _measure_reference(self, eager: FeatureStats, generator: torch.Generator) -> _Reference:
        """B: the eager images of `fid_images` inputs drawn after A's from the same generator; and FID(B, A)."""
        module, count = self.module, self.fid_images
        other = FeatureStats(inception.FEATURE_DIM, True, self.device)
        sizes = batch_sizes(module, count)
        what = f"export: {sum(sizes)} eager images of other latents and their Inception features"
        with Stage(what, total=sum(sizes)) as stage:
            done = 0
            for size in sizes:
                inputs = module.example_inputs(size, generator)
                with stage.part("eager"), torch.no_grad(), fp32_math(tf32=False):
                    img = module(*(x.to(self.device) for x in inputs))
                with stage.part("Inception features"):
                    other.append(self.net(as_nchw_uint8(img[: count - done]).to(self.device)))
                done += size
                stage.update(size)
        other.finalize(count)
        return _Reference(other, frechet_distance(*other.mean_cov(), *eager.mean_cov()))

    def _distances(self, exported: FeatureStats) -> dict:
        """The FID and KID figures of the exported images' features against the reference."""
        reference = self.reference
        fid_exported = frechet_distance(*reference.other.mean_cov(), *exported.mean_cov())
        kid, _std = kernel_inception_distance(
            reference.other.all, exported.all, KID_SUBSETS, KID_SUBSET_SIZE, self.seed
        )
        return {
            "fid_delta": fid_exported - reference.fid_eager,
            "kid": kid,
            "kid_subsets": KID_SUBSETS,
            "kid_subset_size": min(KID_SUBSET_SIZE, self.fid_images),  # the subsets kernel_inception_distance draws
            "fid_exported": fid_exported,
            "fid_eager": reference.fid_eager,
        }


def _run_both(module: DeployableGenerator, runner, inputs: tuple, device, stage: Stage):
    """(eager, exported) images of the same inputs, each timed as a part of `stage`."""
    with stage.part("eager"), torch.no_grad(), fp32_math(tf32=False):
        eager = module(*(x.to(device) for x in inputs)).cpu()
    with stage.part("exported"):
        exported = runner(*inputs)
    assert exported.shape == eager.shape and exported.dtype == eager.dtype, (exported.shape, exported.dtype)
    return eager, exported


def problems(figures: Figures, max_abs_diff: float | None, max_fid_delta: float) -> list[str]:
    """Each limit the figures break, as a line naming the flag."""
    found = []
    if max_abs_diff is not None and not figures.max_abs_diff <= max_abs_diff:
        found.append(f"max abs pixel difference {figures.max_abs_diff:.3g} > --max-abs-diff {max_abs_diff:g}")
    if figures.fid_delta is not None and not figures.fid_delta <= max_fid_delta:
        found.append(
            f"the exported images' FID is {figures.fid_delta:.4g} above the eager images' > --max-fid-delta "
            f"{max_fid_delta:g} (FID to {figures.fid_images} eager images of other latents: exported "
            f"{figures.fid_exported:.4g}, eager {figures.fid_eager:.4g})"
        )
    return found
