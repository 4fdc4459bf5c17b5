"""`ganforge metrics`: FID, KID, precision/recall, SWD, equivariance, PPL and IS of a generator or of image sets. Its
options are derived from the declarations on `MetricsOptions` (`ganforge.metrics.options`)."""

import click

from ganforge.cli.declared import SectionedCommand, declared_options
from ganforge.cli.help import examples
from ganforge.metrics.options import METRICS_OPTIONS, MetricsOptions
from ganforge.option import given


@click.command(
    cls=SectionedCommand,
    epilog=examples(
        "ganforge metrics --network runs/00000-faces-auto-gpus1-batch32/snapshots/network-snapshot-000400.safetensors "
        "--data faces256.zip --metrics fid50k_full,kid50k_full",
        "ganforge metrics --real faces256.zip --fake generated/ --metrics fid10k",
        "ganforge metrics --network sg3-t.pkl --metrics eqt50k_int,eqr50k",
        "ganforge metrics --network ffhq.pkl --metrics ppl_wend,is50k --vgg16 vgg16.pt "
        "--inception-classifier inception-2015-12-05.pt",
    ),
)
@declared_options(METRICS_OPTIONS)
def metrics(**options):
    """FID, KID, precision/recall, SWD, equivariance, PPL and IS of a snapshot (with a dataset where the metric
    compares), or of --fake against --real images."""
    from ganforge.metrics.command import run

    run(MetricsOptions(**given(options)))
