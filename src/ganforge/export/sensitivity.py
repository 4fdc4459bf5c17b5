"""How much each int8 layer alone changes the image: the ranking `--keep-float auto` keeps in float from the top.

Each quantizable layer is quantized on its own (the same quantizer settings and calibration as the export) and the
one-layer model is run beside the float ONNX model on the same generated inputs. The layer's effect is measured by
what the check judges: when it measures FID, the mean squared distance between the Inception features of the two
models' images of the same input; else the mean squared pixel difference. The two orders differ: on the demo's
digits generator the last convolution alone moved the FID by 2.0 of the whole model's 3.3 (the next layer 0.4, every
other 0.17 or less; benchmarks/quantize_sensitivity.py); by features it ranks first (12.0, then 7.5, the rest 2.3 to
3.6, over 64 inputs), by pixels fourth.
"""

import contextlib
import dataclasses
import math
from collections.abc import Callable, Iterator
from pathlib import Path

import torch

from ganforge.export import quantize
from ganforge.export.check import Figures, as_nchw_float, batch_sizes
from ganforge.export.onnx import OnnxRunner
from ganforge.export.options import ExportOptions
from ganforge.export.wrapper import DeployableGenerator
from ganforge.progress import Stage

SENSITIVITY_LATENTS = 32  # inputs each one-layer model is compared on: the ranking needs order, not precision


@dataclasses.dataclass(frozen=True)
class LayerEffect:
    """One layer quantized alone: the mean squared pixel difference from the float model ([-1, 1] scale) and the
    PSNR it makes; the mean squared feature distance from the float model's images when features were measured. The
    harm it is ranked by is the features' distance if there is one, else the pixels'."""

    layer: str
    mse: float
    feature_distance: float | None = None

    @property
    def harm(self) -> float:
        return self.mse if self.feature_distance is None else self.feature_distance

    @property
    def psnr_db(self) -> float:
        return math.inf if self.mse == 0 else 10 * math.log10(2.0**2 / self.mse)


def rank_layers(
    float_model: Path,
    module: DeployableGenerator,
    layers: list[str],
    quantize_only: Callable[[list[str], Path], None],
    latents: int,
    seed: int,
    folder: Path,
    features: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> list[LayerEffect]:
    """Every layer of `layers` quantized alone by `quantize_only(layers, destination)`, compared with `float_model`
    on `latents` inputs drawn with `seed`, by pixels and, given `features` (a model's output images -> a feature
    vector per image), by features; most harmful first, equal effects in network order (a stable sort)."""
    names = [spec.name for spec in module.inputs()]
    reference = OnnxRunner(float_model, names)
    generator = torch.Generator().manual_seed(seed)
    inputs = [module.example_inputs(size, generator) for size in batch_sizes(module, latents)]
    expected = [reference(*batch) for batch in inputs]
    expected_features = torch.cat([features(img) for img in expected]) if features else None
    by = "Inception features" if features else "pixels"
    effects = []
    with Stage(f"export: int8 sensitivity by {by}, each of {len(layers)} layers alone", len(layers), "layer") as s:
        for layer in layers:
            path = folder / "one-layer.onnx"
            quantize_only([layer], path)
            runner = OnnxRunner(path, names)
            images = [runner(*batch) for batch in inputs]
            pixels = [as_nchw_float(img) - as_nchw_float(want) for img, want in zip(images, expected, strict=True)]
            effect = LayerEffect(layer, torch.cat(pixels).square().mean().item())
            if features:
                found = torch.cat([features(img) for img in images])
                effect = dataclasses.replace(effect, feature_distance=_per_image_squared(found, expected_features))
            effects.append(effect)
            path.unlink()
            s.update(1)
    return sorted(effects, key=lambda effect: -effect.harm)


def _per_image_squared(found: torch.Tensor, expected: torch.Tensor) -> float:
    """The mean over images of the squared distance between their feature vectors."""
    return (found.double() - expected.double()).square().sum(1).mean().item()


class FloatLayers:
    """The sets of quantizable layers to keep in float, one per attempt at the check, for `export_network` to iterate:
    the one set the options name (--keep-float LAYERS, or none); with --keep-float auto, none first, then after each
    failed check (`record`) one more layer from the top of the sensitivity ranking (measured when first needed), while
    at least one layer is left to quantize; ranked by `features` (Check.image_features) when the check measures FID,
    else by pixels. `card` is what the choice adds to the card."""

    def __init__(
        self,
        module: DeployableGenerator,
        options: ExportOptions,
        traced: Path,
        layers: list[str],
        tmp: Path,
        features: Callable[[torch.Tensor], torch.Tensor] | None = None,
    ):
        self.module, self.options, self.traced, self.layers, self.tmp = module, options, traced, layers, tmp
        self.features = features
        self.ranking: list[LayerEffect] | None = None
        self.attempts: list[dict] = []
        self.kept: list[str] = []

    def __iter__(self) -> Iterator[list[str]]:
        yield []
        while self.options.keep_float_auto and len(self.kept) < len(self.attempts) < len(self.layers):
            if self.ranking is None:
                self.ranking = rank_layers(self.traced, self.module, self.layers, self._quantize_only,
                                           SENSITIVITY_LATENTS, self.options.seed + 2, self.tmp,
                                           self.features)  # fmt: skip
            self.kept = [effect.layer for effect in self.ranking[: len(self.attempts)]]
            yield self.kept

    def attempt(self) -> contextlib.AbstractContextManager:
        """The stage of one attempt after the first failed: its export and check, named by the layers kept."""
        if not self.kept:
            return contextlib.nullcontext()
        return Stage(f"export: int8 with {', '.join(self.kept)} in float (the layers that change the image most)",
                     bar=False)  # fmt: skip

    def record(self, figures: Figures) -> bool:
        """Note the figures of the last set, which failed the check; whether another set will be tried."""
        tried = {"float_layers": list(self.kept), "fid_delta": figures.fid_delta, "psnr_db": figures.psnr_db}
        self.attempts.append(tried)
        return self.options.keep_float_auto and len(self.attempts) < len(self.layers)

    def _quantize_only(self, layers: list[str], path: Path) -> None:
        quantize.quantize_int8(self.traced, path, self.module, layers, **self.options.int8_settings(), show=False)

    def hint(self) -> str | None:
        """After the last set failed with --keep-float auto: what is left to try."""
        if not self.options.keep_float_auto:
            return None
        return (
            "with all but one layer in float the check still fails; use --precision fp16, or calibrate differently "
            "(--calib-method, --int8-weights)"
        )

    def card(self) -> dict:
        """--keep-float auto: the sensitivity ranking (when measured) and each set tried with its figures."""
        if not self.options.keep_float_auto:
            return {}
        ranking = [
            {"layer": e.layer, "mse": e.mse, "psnr_db": e.psnr_db, "feature_distance": e.feature_distance}
            for e in self.ranking or []
        ]
        return {"auto": {"ranking": ranking, "rejected": self.attempts, "latents": SENSITIVITY_LATENTS}}
