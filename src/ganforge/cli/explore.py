"""`ganforge explore`: a trained model in the browser, served from this machine."""

from pathlib import Path

import click

from ganforge.cli.help import examples
from ganforge.devices import DEVICE_CHOICES


@click.command(
    epilog=examples(
        "ganforge explore --network runs/00000-faces-auto-gpus1-batch32",
        "ganforge explore --network ffhq.pkl --port 8000",
        "ganforge explore --network snapshots/network-snapshot-000200.000.safetensors --network "
        "snapshots/network-snapshot-000400.000.safetensors",
        "ganforge explore --network ffhq.pkl --host 0.0.0.0 --port 8000 --device cuda",
        "ganforge explore --network ffhq.pkl --port 8000 --allowed-host explore.example.com",
    )
)
@click.option(
    "--network",
    "networks",
    type=click.Path(path_type=Path),
    required=True,
    multiple=True,
    help="Generator: a ganforge snapshot (.safetensors), an NVlabs pickle (.pkl), a rosinality checkpoint (.pt) or "
    "a run folder (its newest snapshot). Repeat it to see several networks side by side.",
)
@click.option(
    "--host",
    default="127.0.0.1",
    help="Address to listen on. Loopback (the default) serves this machine only: reach it from a laptop through an "
    "SSH tunnel. Any other address warns and requires the random token in the printed URL.",
)
@click.option("--port", type=click.IntRange(0, 65535), default=0, help="Port; 0 picks a free one.")
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    help="A host name the page may also be opened by (a reverse proxy's, a DNS name of this machine); repeat it for "
    "several. Requests naming any other host than the address served are refused (403), so that no web page can "
    "reach the server by pointing a name of its own at this address.",
)
@click.option("--device", type=click.Choice(DEVICE_CHOICES), default="auto")
def explore(networks, host, port, allowed_hosts, device):
    """Serve a page to explore generators in a browser: seeds, truncation, style mixing, interpolation, StyleGAN3
    moves and feature maps, each image with the `ganforge generate` command that writes it. Prints the URL."""
    from ganforge.explore import serve

    serve(list(networks), host, port, device, allowed_hosts)
