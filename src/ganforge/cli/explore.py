"""`ganforge explore`: a trained model in the browser, served from this machine. Its options are derived from the
declarations on `ExploreOptions` (`ganforge.explore.options`)."""

import click

from ganforge.cli.declared import SectionedCommand, declared_options
from ganforge.cli.help import examples
from ganforge.explore.options import EXPLORE_OPTIONS, ExploreOptions
from ganforge.option import given


@click.command(
    cls=SectionedCommand,
    epilog=examples(
        "ganforge explore --network runs/00000-faces-auto-gpus1-batch32",
        "ganforge explore --network ffhq.pkl --port 8000",
        "ganforge explore --network ffhq.pkl --latents projections/",
        "ganforge explore --network snapshots/network-snapshot-000200.000.safetensors --network "
        "snapshots/network-snapshot-000400.000.safetensors",
        "ganforge explore --network ffhq.pkl --host 0.0.0.0 --port 8000 --device cuda",
        "ganforge explore --network ffhq.pkl --port 8000 --allowed-host explore.example.com",
    ),
)
@declared_options(EXPLORE_OPTIONS)
def explore(**options):
    """Serve a page to explore generators in a browser: seeds or projected latents, truncation, moving ws, style
    mixing, interpolation, StyleGAN3 moves, feature maps and spectra, each image with the `ganforge generate` command
    that writes it. Prints the URL."""
    from ganforge.explore import serve

    o = ExploreOptions(**given(options))
    serve(o.networks, o.host, o.port, o.device, o.allowed_hosts, o.latents)
