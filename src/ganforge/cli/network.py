"""`ganforge import`: official (PyTorch and TensorFlow-era) and rosinality networks into snapshots, read without
executing them. Its options are derived from the declarations on `ImportOptions` (`ganforge.interop.options`)."""

from pathlib import Path

import click

from ganforge.cli.declared import declared_options
from ganforge.cli.help import examples
from ganforge.interop.options import IMPORT_OPTIONS, ImportOptions
from ganforge.option import given


@click.command(
    "import",
    epilog=examples(
        "ganforge import stylegan2-ffhq-256x256.pkl ffhq256.safetensors",
        "ganforge import 550000.pt D.safetensors --which D",
    ),
)
@click.argument("src", type=click.Path(path_type=Path))
@click.argument("dest", type=click.Path(path_type=Path))
@declared_options(IMPORT_OPTIONS)
def import_(src: Path, dest: Path, **options):
    """Convert an NVlabs pickle (.pkl: PyTorch or TensorFlow-era), a released R3GAN snapshot (.pkl) or a rosinality
    checkpoint (.pt) into DEST.safetensors, without executing it."""
    from ganforge.interop import import_network

    which = ImportOptions(**given(options)).which
    meta = import_network(src, dest, which)
    click.echo(f"wrote {dest}: {which} of {src} ({meta['source_format']})")
