"""`ganforge import`: official (PyTorch and TensorFlow-era) and rosinality networks into snapshots, read without
executing them."""

from pathlib import Path

import click

from ganforge.cli.help import examples


@click.command(
    "import",
    epilog=examples(
        "ganforge import stylegan2-ffhq-256x256.pkl ffhq256.safetensors",
        "ganforge import 550000.pt D.safetensors --which D",
    ),
)
@click.argument("src", type=click.Path(path_type=Path))
@click.argument("dest", type=click.Path(path_type=Path))
@click.option(
    "--which",
    type=click.Choice(["G_ema", "G", "D"]),
    default="G_ema",
    help="Network to take; D is written as a discriminator file for fine-tuning.",
)
def import_(src: Path, dest: Path, which: str):
    """Convert an NVlabs pickle (.pkl: PyTorch or TensorFlow-era), a released R3GAN snapshot (.pkl) or a rosinality
    checkpoint (.pt) into DEST.safetensors, without executing it."""
    from ganforge.interop import import_network

    meta = import_network(src, dest, which)
    click.echo(f"wrote {dest}: {which} of {src} ({meta['source_format']})")
