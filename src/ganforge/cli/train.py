"""`ganforge train`: its options are derived from the declarations on the Config fields (`ganforge.config`)."""

import sys

import click

from ganforge.cli.declared import SectionedCommand, declared_options
from ganforge.cli.help import examples
from ganforge.train.options import TRAIN_OPTIONS, TrainOptions


@click.command(
    cls=SectionedCommand,
    epilog=examples(
        "ganforge train --data digits.zip --outdir runs --cfg tiny --kimg 40",
        "ganforge train --data faces256.zip --outdir runs --cfg paper256 --gamma 1 --mirror --dry-run",
        "ganforge train --data faces256.zip --outdir runs --resume ffhq256.safetensors --freeze-d 4 --kimg 500",
    ),
)
@declared_options(TRAIN_OPTIONS)
def train(**options):
    """Train a StyleGAN2 generator; rerunning the same command resumes. Multi-GPU: torchrun -m ganforge train."""
    from ganforge.train.command import main as train_main

    sys.exit(train_main(TrainOptions(**options)))
