"""`ganforge project`: real images into a generator's latent space (W or W+), with optional pivotal tuning."""

from pathlib import Path

import click

from ganforge.cli.help import examples
from ganforge.devices import DEVICE_CHOICES
from ganforge.limits import MAX_CLASSES
from ganforge.project.options import MAX_BATCH, MAX_SEED, MAX_STEPS, SEED, SPACES, STEPS


@click.command(
    epilog=examples(
        "ganforge project --network ffhq.pkl --target me.jpg --outdir out",
        "ganforge project --network ffhq.pkl --target a.png --target b.png --outdir out --space wplus --tune-g 350",
        "ganforge project --network ffhq.pkl --target me.jpg --outdir out --perceptual vgg16.pt --video",
    )
)
@click.option(
    "--network",
    type=click.Path(path_type=Path),
    required=True,
    help="Generator: a ganforge snapshot, an NVlabs pickle (.pkl) or a rosinality checkpoint (.pt); StyleGAN2 or 3.",
)
@click.option(
    "--target",
    "targets",
    type=click.Path(path_type=Path),
    multiple=True,
    required=True,
    help="An image to project (any size: its centred square is resized to the network's); repeat for several.",
)
@click.option(
    "--outdir",
    type=click.Path(file_okay=False, path_type=Path),
    required=True,
    help="Output folder: each target's files in OUTDIR/<its name>/ (projected_w.npz, proj.png, compare.png, ...).",
)
@click.option(
    "--space",
    type=click.Choice(SPACES),
    default="w",
    show_default=True,
    help="w: one w for every layer (the official projector; edits behave); wplus: one w per layer (closer fits).",
)
@click.option(
    "--steps", type=click.IntRange(1, MAX_STEPS), default=STEPS, show_default=True, help="Optimisation steps."
)
@click.option(
    "--tune-g",
    type=click.IntRange(0, MAX_STEPS),
    default=0,
    show_default=True,
    metavar="STEPS",
    help="Pivotal tuning (PTI, Roich et al. 2022): tune G around the projection for STEPS steps (350 in the "
    "paper) and write it as G_tuned.safetensors beside the latent; 0: off.",
)
@click.option(
    "--perceptual",
    default="inception",
    show_default=True,
    metavar="inception|none|PATH",
    help="The distance to the target: inception (offline, from the fid extra's Inception: an LPIPS-like distance, "
    "not the official one), none (pixels only), or the path of NVlabs' vgg16.pt (the official projector's).",
)
@click.option(
    "--seed",
    type=click.IntRange(0, MAX_SEED),
    default=SEED,
    show_default=True,
    help="Fixes each target's noise maps and the noise on w.",
)
@click.option("--class", "class_index", type=click.IntRange(0, MAX_CLASSES - 1), help="Class of a conditional network.")
@click.option(
    "--batch",
    type=click.IntRange(1, MAX_BATCH),
    default=4,
    show_default=True,
    help="Targets optimised together (each on its own; faster on a GPU).",
)
@click.option("--video", is_flag=True, help="Also proj.mp4 (or .webp/.gif): the optimisation beside the target.")
@click.option("--device", type=click.Choice(DEVICE_CHOICES), default="auto", show_default=True)
@click.option(
    "--inception",
    type=click.Path(path_type=Path),
    help="The FID Inception file for --perceptual inception (default: found as `ganforge metrics` finds it).",
)
def project(**options):
    """Project real images into a generator's latent space: projected_w.npz in the official layout (for
    `ganforge generate --projected-w`), the images side by side, a record of the distances, PSNR and SSIM."""
    from ganforge.project import ProjectOptions
    from ganforge.project import project as run_project
    from ganforge.project.run import closing_note

    parsed = ProjectOptions(**options)
    click.echo(closing_note(run_project(parsed), parsed.outdir))
