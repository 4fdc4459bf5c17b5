"""The card written next to every export (`FILE.json`): what the model is, how to call it, where it came from, and
the figures of the check it passed.

Fields (format_version 4; version 3 had no `quantization.qat`, `activation_ranges` and
`auto.ranking[].feature_distance`, version 2 had the FID between the paired image sets as `check.fid`, version 1
also `quantization` as one line of text):
    format, precision, file, file_sha256, file_bytes
    inputs, output     [{name, shape ("batch" where any size works), dtype, meaning}], in call order; the output's
                       shape is [batch, C, H, W] (NCHW float32) or [batch, H, W, C] (NHWC uint8), with H != W for a
                       non-square network
    batch              "dynamic" or the fixed batch size
    truncation_psi, noise ("const": baked in; "input": noise inputs), output_layout
    opset              ONNX opset (onnx only)
    float_parts        which parts keep float
    quantized_layers   the int8 layers (int8 only)
    quantization       int8 only: every setting that shaped the model. tool (onnxruntime's version), format (QDQ),
                       op_types; weights and activations {type, per_channel (--int8-weights), symmetric};
                       calibration {method (--calib-method: MinMax, Percentile, Entropy), latents (--calib), drawn
                       (rounded up to whole batches of a fixed --batch), batch, seed, source}; float_layers
                       (quantizable layers kept in float), keep_float (--keep-float as given: layers, or "auto"),
                       quantized_nodes; activation_ranges (the calibration's, or learned by the fine-tuning);
                       with --keep-float auto also auto {ranking: [{layer, mse, psnr_db,
                       feature_distance}] (each layer alone in int8 against the float model over `latents` inputs:
                       pixels, and Inception features when the check measures FID, ranked by these, most harmful first;
                       measured once a check failed), rejected: [{float_layers, fid_delta, psnr_db}] (each set
                       tried before the one written), latents}; qat (--qat-kimg; null without): {images, batch,
                       seed, loss, optimizer {name, lr, betas}, trained, mse_before and mse_after (the pixel MSE of
                       the simulated int8 model from the float generator on mse_latents fixed inputs), seconds,
                       rounding (what was simulated)}
    source             network file name and SHA-256, its kind, architecture and constructor config
    check              figures (images, max/mean abs diff, PSNR; fid_images; fid_delta = fid_exported - fid_eager,
                       the FIDs of the exported and of the eager images of the check's latents to as many eager
                       images of other latents, the figure --max-fid-delta limits; KID of the exported images
                       against those, and its subsets), batch sizes, runtime, limits (the thresholds the figures
                       passed), seed, passed; with FID also the feature network and protocol of ganforge.metrics
    versions           of ganforge, torch and the export libraries used
"""

import dataclasses
import importlib.metadata
import json
from pathlib import Path

import torch

from ganforge import __version__
from ganforge.digest import file_sha256
from ganforge.durable import replace_file
from ganforge.export.check import Figures
from ganforge.export.options import ExportOptions
from ganforge.export.quantize import FLOAT_PARTS
from ganforge.export.wrapper import DeployableGenerator
from ganforge.metrics import inception
from ganforge.snapshot import architecture_of

FORMAT_VERSION = 4
FP16_FLOAT_PARTS = (
    "mapping network computed in float32 (weights stored in float16); everything else float16; "
    "inputs and outputs float32"
)
LIBRARIES = ("onnx", "onnxscript", "onnxruntime")


def card_path(model: Path) -> Path:
    """G.onnx -> G.onnx.json"""
    return model.with_name(model.name + ".json")


def make_card(
    options: ExportOptions,
    module: DeployableGenerator,
    model: Path,
    figures: Figures,
    limits: dict,
    source_meta: dict,
    opset: int | None,
    quantized: list[str],
    quantization: dict | None,
) -> dict:
    """The card's fields for the candidate file `model` (hashed here) that passed its check; `quantized` and
    `quantization` are the int8 layers and what `quantize.quantize_int8` recorded (int8 only)."""
    card = {
        "format_version": FORMAT_VERSION,
        "format": options.format,
        "precision": options.precision,
        "file": options.out.name,
        "file_sha256": file_sha256(model),
        "file_bytes": model.stat().st_size,
        "inputs": [dataclasses.asdict(spec) for spec in module.inputs()],
        "output": dataclasses.asdict(module.output()),
        "batch": "dynamic" if options.batch is None else options.batch,
        "truncation_psi": options.trunc,
        "noise": options.noise,
        "output_layout": "NHWC uint8" if options.uint8 else "NCHW float32",
    }
    if opset is not None:
        card["opset"] = opset
    card |= _precision_fields(options, quantized, quantization)
    card["source"] = _source(options.network, module, source_meta)
    card["check"] = dataclasses.asdict(figures) | _feature_network(figures)
    card["check"] |= {"limits": limits, "seed": options.seed, "passed": True}
    card["versions"] = _versions(options.format)
    return card


def write_card(path: Path, card: dict) -> None:
    replace_file(path, (json.dumps(card, indent=2) + "\n").encode())


def _precision_fields(options: ExportOptions, quantized: list[str], quantization: dict | None) -> dict:
    if options.precision == "int8":
        given = "auto" if options.keep_float_auto else list(options.keep_float)
        settings = quantization | {"keep_float": given}
        return {"float_parts": FLOAT_PARTS, "quantized_layers": quantized, "quantization": settings}
    if options.precision == "fp16":
        return {"float_parts": FP16_FLOAT_PARTS}
    return {"float_parts": "everything (float32)"}


def _feature_network(figures: Figures) -> dict:
    """The network and protocol behind FID and KID, when they were measured."""
    if figures.fid_delta is None:
        return {}
    return {"feature_network": inception.FEATURE_NETWORK, "protocol": inception.PROTOCOL}


def _source(network: Path, module: DeployableGenerator, meta: dict) -> dict:
    return {
        "network": network.name,
        "sha256": file_sha256(network),
        "source_format": meta.get("source_format", "ganforge snapshot"),
        "architecture": architecture_of(module.G),
        "config": module.G.config,
    }


def _versions(fmt: str) -> dict:
    versions = {"ganforge": __version__, "torch": torch.__version__}
    if fmt == "onnx":
        versions |= {name: importlib.metadata.version(name) for name in LIBRARIES}
    return versions
