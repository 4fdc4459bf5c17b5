"""`ganforge dataset build|info|verify`: training archives from folders and zips of images. Their options are derived
from the declarations in `ganforge.data.options`."""

import click

from ganforge.cli.declared import SectionedCommand, declared_options
from ganforge.cli.help import examples
from ganforge.data.options import BUILD_OPTIONS, INFO_OPTIONS, VERIFY_OPTIONS


@click.group()
def dataset():
    """Build, inspect and verify training archives (zip in NVlabs' layout, or the fast pre-decoded format)."""


@dataset.command(
    "build",
    cls=SectionedCommand,
    epilog=examples(
        "ganforge dataset build ~/photos faces256.zip --resolution 256",
        "ganforge dataset build afhq/train afhq512.zip --resolution 512 --labels folders --format fast",
        "ganforge dataset build ~/photos faces256-shards --resolution 256 --format shards --shard-size 1GB",
        "ganforge dataset build ~/cars cars512x256.zip --resolution 512x256",
    ),
)
@click.argument("src", type=click.Path(path_type=str))
@click.argument("dest", type=click.Path(path_type=str))
@declared_options(BUILD_OPTIONS)
def dataset_build(src, dest, **options):
    """Validate and convert a folder or zip of images (SRC) into a training archive (DEST).

    EXIF orientation is applied; transparency is composited on white; palette, CMYK and 16-bit images are converted.
    """
    from ganforge.data.build import BuildOptions, build

    summary = build(src, dest, BuildOptions.parse(**options))
    click.echo(f"wrote {summary['written']} images to {summary['dest']} ({summary['format']})")
    click.echo(f"content hash: {summary['content_hash']}")
    if summary["skipped"]:
        click.echo(f"skipped {len(summary['skipped'])} bad file(s), listed in {summary['report']}")
    if summary["ignored"]:
        click.echo(f"ignored {summary['ignored']} file(s) without an image suffix")


@dataset.command("info", cls=SectionedCommand, epilog=examples("ganforge dataset info faces256.zip --json"))
@click.argument("path", type=click.Path(path_type=str))
@declared_options(INFO_OPTIONS)
def dataset_info(path, as_json):
    """Count, resolution, channels, label histogram, content hash and format of a dataset."""
    import json

    from ganforge.data.check import info, info_text

    summary = info(path)
    click.echo(json.dumps(summary) if as_json else info_text(summary))


@dataset.command("verify", cls=SectionedCommand, epilog=examples("ganforge dataset verify faces256.zip --workers 4"))
@click.argument("path", type=click.Path(path_type=str))
@declared_options(VERIFY_OPTIONS)
def dataset_verify(path, workers):
    """Decode every image and recompute the content hash; exit 2 listing every problem."""
    from ganforge.data.check import verify

    result = verify(path, workers)
    checked = "content hash verified" if result["hash_checked"] else "no recorded content hash to check"
    click.echo(f"ok: {result['count']} images decode; {checked}")
