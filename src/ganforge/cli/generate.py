"""`ganforge generate`: images, grids, interpolations and style mixing from a generator, from seeds or projected
latents, for a class or label vectors of a conditional network."""

from pathlib import Path

import click

from ganforge.cli.help import examples
from ganforge.devices import DEVICE_CHOICES
from ganforge.generate.options import (
    ANIMATION_FORMATS,
    DEFAULT_FPS,
    DEFAULT_RESIZE,
    FPS_RANGE,
    INTERP_SPACES,
    MAX_GIF_FPS,
    MAX_SIZE,
    NOISE_MODES,
    RESIZE_FILTERS,
)


@click.command(
    epilog=examples(
        "ganforge generate --network ffhq.pkl --outdir out --seeds 0-7 --trunc 0.7",
        "ganforge generate --network snapshot.safetensors --outdir out --seeds 0-15 --grid 4x4",
        "ganforge generate --network snapshot.safetensors --outdir out --seeds 0-8 --interp 120 --size 256 --fps 30",
        "ganforge generate --network ffhq.pkl --outdir out --projected-w a/projected_w.npz --projected-w "
        "b/projected_w.npz --interp 60",
        "ganforge generate --network attributes.safetensors --outdir out --seeds 0-3 --label-file labels.csv",
    )
)
@click.option(
    "--network",
    type=click.Path(path_type=Path),
    required=True,
    help="Generator: a ganforge snapshot (.safetensors), an NVlabs pickle (.pkl) or a rosinality checkpoint "
    "(.pt); foreign files are converted in memory, never executed.",
)
@click.option("--outdir", type=click.Path(file_okay=False, path_type=Path), required=True, help="Output folder.")
@click.option("--seeds", help="Images to make, by seed: ranges and lists, e.g. 0-7,12,100-199.")
@click.option(
    "--projected-w",
    type=click.Path(path_type=Path),
    multiple=True,
    metavar="FILE",
    help="Images from projected latents instead of seeds: a projected_w.npz as `ganforge project` or NVlabs' "
    "projector writes it, one image per row (proj00.png, proj01.png, ...). Repeat the flag to take the rows of "
    "several files in order, e.g. to --interp between two projected photos.",
)
@click.option("--trunc", type=float, help="Truncation psi: 1 is none; 0.5-0.7 trade variety for quality.  [default: 1]")
@click.option("--trunc-cutoff", type=click.IntRange(min=1), help="Truncate only the first N ws.  [default: all]")
@click.option(
    "--class",
    "class_index",
    type=click.IntRange(min=0),
    help="Class of a conditional network (its one-hot label vector). One of --class, --label and --label-file.",
)
@click.option(
    "--label",
    metavar="V,V,...",
    help="Label vector of a conditional network for every image: as many comma-separated finite numbers as the "
    "network has label inputs (c_dim), multi-hot or continuous, e.g. 0.2,1,0.",
)
@click.option(
    "--label-file",
    type=click.Path(path_type=Path),
    metavar="CSV",
    help="Label vectors, one per line (c_dim comma-separated numbers; an optional first line of column names): "
    "every seed is made with every vector, seedS-labelK.png for vector K (from 0); PNGs only.",
)
@click.option(
    "--noise-mode",
    type=click.Choice(NOISE_MODES),
    default="const",
    help="const: the network's fixed noise; random: drawn from each image's seed (row k of --projected-w: seed k); "
    "none.",
)
@click.option(
    "--batch",
    type=click.IntRange(min=1),
    default=16,
    help="Images per forward pass. 1 makes each image alone (as NVlabs' generate.py): its file is then the same "
    "whatever the other seeds; bigger batches are faster and round differently (a pixel may move by one level).",
)
@click.option("--device", type=click.Choice(DEVICE_CHOICES), default="auto")
@click.option(
    "--grid",
    metavar="RxC",
    help="One grid.png, R rows by C columns, one seed per cell, instead of a PNG per seed; with --interp, a grid "
    "of loops, each cell through its own consecutive seeds (R x C x K seeds, K >= 2 per cell).",
)
@click.option(
    "--interp",
    type=click.IntRange(min=1),
    metavar="FRAMES",
    help="Looping interpolation through the seeds, FRAMES per seed (interp.mp4, .webp or .gif).",
)
@click.option(
    "--fps",
    type=float,
    help=f"Frames per second of --interp, from {FPS_RANGE[0]:g} to {FPS_RANGE[1]:g} (GIF: up to {MAX_GIF_FPS}).  "
    f"[default: {DEFAULT_FPS:g}]",
)
@click.option(
    "--interp-space",
    type=click.Choice(INTERP_SPACES),
    help="z: spherical in z; w: linear in w (--projected-w: always w).  [default: z]",
)
@click.option(
    "--interp-format",
    type=click.Choice(ANIMATION_FORMATS),
    default="auto",
    help="auto: mp4 when the video extra (imageio-ffmpeg) is installed, else webp.",
)
@click.option(
    "--style-mix",
    nargs=2,
    metavar="ROWSEEDS COLSEEDS",
    help="stylemix.png: each row seed's image with the --mix-layers ws of each column seed.",
)
@click.option("--mix-layers", metavar="LAYERS", help="ws taken from the column seeds, e.g. 0-3.  [default: 0-6]")
@click.option(
    "--mix-cells",
    is_flag=True,
    help="Also write each mixed cell of --style-mix as its own PNG, mixROW-COL.png (seeds, 7 digits each).",
)
@click.option(
    "--size",
    type=click.IntRange(1, MAX_SIZE),
    metavar="PX",
    help="Every image PX x PX in the files (each cell of a grid, table or video), resampled by --resize; of a "
    "non-square network, PX is the short side and the long side keeps the aspect.  "
    "[default: the network's resolution]",
)
@click.option(
    "--resize",
    type=click.Choice(RESIZE_FILTERS),
    help="How images reach --size: lanczos (smooth), or nearest (each generated pixel a sharp block).  "
    f"[default: {DEFAULT_RESIZE}]",
)
@click.option(
    "--translate",
    metavar="X,Y",
    help="StyleGAN3: move the images by X,Y image widths (x right, y down) through the input transform.",
)
@click.option("--rotate", type=float, metavar="DEG", help="StyleGAN3: rotate the images counter-clockwise by DEG.")
def generate(**options):
    """Images, a grid, a looping interpolation (or a grid of them) or a style-mixing table, from seeds or projected
    latents; the same command gives the same files."""
    from ganforge.generate import GenerateOptions
    from ganforge.generate.run import closing_note
    from ganforge.generate.run import generate as run_generate

    parsed = GenerateOptions.parse(**options)
    click.echo(closing_note(run_generate(parsed), parsed.outdir))
