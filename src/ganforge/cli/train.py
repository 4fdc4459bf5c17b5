"""`ganforge train`: its options are derived from the declarations on the Config fields (`ganforge.config`)."""

import sys

import click

from ganforge.cli.declared import SectionedCommand, declared_options
from ganforge.train.options import TRAIN_OPTIONS, TrainOptions


@click.command(cls=SectionedCommand)
@declared_options(TRAIN_OPTIONS)
def train(**options):
    """Train a StyleGAN2 generator; rerunning the same command resumes. Multi-GPU: torchrun -m ganforge train."""
    from ganforge.train.command import main as train_main

    sys.exit(train_main(TrainOptions(**options)))
