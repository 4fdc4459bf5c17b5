"""`ganforge dataset build|info|verify`: training archives from folders and zips of images."""

import re

import click

from ganforge.cli.help import examples
from ganforge.config.sections import MAX_WORKERS

WORKERS_HELP = "Decoding processes (0: none).  [default: all CPUs]"


def _image_size(text: str | None) -> int | tuple[int, int] | None:
    """`256` -> 256, `512x256` -> (512, 256) (width, height); the limits are checked with the other options."""
    if text is None:
        return None
    match = re.fullmatch(r"\s*(\d{1,6})\s*(?:[xX]\s*(\d{1,6})\s*)?", text)
    if match is None:
        raise click.BadParameter(f"{text!r} is not a side R or a size WxH such as 512x256")
    width, height = int(match.group(1)), match.group(2)
    return width if height is None else (width, int(height))


@click.group()
def dataset():
    """Build, inspect and verify training archives (zip in NVlabs' layout, or the fast pre-decoded format)."""


@dataset.command(
    "build",
    epilog=examples(
        "ganforge dataset build ~/photos faces256.zip --resolution 256",
        "ganforge dataset build afhq/train afhq512.zip --resolution 512 --labels folders --format fast",
        "ganforge dataset build ~/photos faces256-shards --resolution 256 --format shards --shard-size 1GB",
        "ganforge dataset build ~/cars cars512x256.zip --resolution 512x256",
    ),
)
@click.argument("src", type=click.Path(path_type=str))
@click.argument("dest", type=click.Path(path_type=str))
@click.option(
    "--resolution",
    callback=lambda ctx, param, value: _image_size(value),
    help="Output side R (square), or WxH (e.g. 512x256, StyleGAN2 only), powers of two; required unless --transform "
    "none.",
)
@click.option(
    "--transform",
    type=click.Choice(["center-crop", "center-crop-wide", "pad", "none"]),
    default="center-crop",
    help="center-crop: central square; center-crop-wide: central 2:1 band padded to a square; pad: whole image on "
    "black; none: images must already be RxR. Never upscales: smaller images are bad files.",
)
@click.option("--resize-filter", type=click.Choice(["box", "lanczos", "bicubic"]), default="lanczos")
@click.option(
    "--labels",
    default="auto",
    help="folders (sub-folder names), source (SRC's dataset.json: classes or label vectors), none, or PATH.csv: "
    "`file,label` rows (classes), or a header `file,NAME1,NAME2,...` and one number per column (label vectors, "
    "multi-hot or continuous); auto: source when SRC has labels, else none.",
)
@click.option("--channels", type=click.Choice(["1", "3"]), default="3", help="1: greyscale, 3: RGB.")
@click.option("--max-images", type=click.IntRange(1, 10**9), help="Use only the first N files (sorted by path).")
@click.option(
    "--format",
    type=click.Choice(["zip", "fast", "shards"]),
    help="zip (NVlabs' layout), fast (pre-decoded, memory-mapped), or shards (a folder of WebDataset tar shards and "
    "index.json, to stream from object storage).  [default: zip if DEST ends in .zip, else fast]",
)
@click.option("--shard-size", help="--format shards: about this much a shard, e.g. 1GB, 256MB.  [default: 1GB]")
@click.option(
    "--shard-encoding",
    type=click.Choice(["png", "u8"]),
    default="png",
    help="--format shards: png, or u8 (raw pixels: about 3x larger, nothing to decode when training).",
)
@click.option(
    "--on-error",
    type=click.Choice(["fail", "skip"]),
    default="fail",
    help="fail: write nothing and list every bad file; skip: build from the good ones, list the rest in "
    "DEST.report.json.",
)
@click.option(
    "--workers", type=click.IntRange(0, MAX_WORKERS), help="Decoding processes (0: none).  [default: all CPUs]"
)
def dataset_build(src, dest, channels, **options):
    """Validate and convert a folder or zip of images (SRC) into a training archive (DEST).

    EXIF orientation is applied; transparency is composited on white; palette, CMYK and 16-bit images are converted.
    """
    from ganforge.data.build import BuildOptions, build

    summary = build(src, dest, BuildOptions(channels=int(channels), **options))
    click.echo(f"wrote {summary['written']} images to {summary['dest']} ({summary['format']})")
    click.echo(f"content hash: {summary['content_hash']}")
    if summary["skipped"]:
        click.echo(f"skipped {len(summary['skipped'])} bad file(s), listed in {summary['report']}")
    if summary["ignored"]:
        click.echo(f"ignored {summary['ignored']} file(s) without an image suffix")


@dataset.command("info", epilog=examples("ganforge dataset info faces256.zip --json"))
@click.argument("path", type=click.Path(path_type=str))
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def dataset_info(path, as_json):
    """Count, resolution, channels, label histogram, content hash and format of a dataset."""
    import json

    from ganforge.data.check import info, info_text

    summary = info(path)
    click.echo(json.dumps(summary) if as_json else info_text(summary))


@dataset.command("verify", epilog=examples("ganforge dataset verify faces256.zip --workers 4"))
@click.argument("path", type=click.Path(path_type=str))
@click.option(
    "--workers", type=click.IntRange(0, MAX_WORKERS), help="Decoding processes (0: none).  [default: all CPUs]"
)
def dataset_verify(path, workers):
    """Decode every image and recompute the content hash; exit 2 listing every problem."""
    from ganforge.data.check import verify

    result = verify(path, workers)
    checked = "content hash verified" if result["hash_checked"] else "no recorded content hash to check"
    click.echo(f"ok: {result['count']} images decode; {checked}")
