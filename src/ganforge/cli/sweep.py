"""`ganforge sweep`: a hyperparameter study of `ganforge train` runs (Optuna). Its options: the `train` options every
trial shares (train's own declarations) and its own, declared on `SweepOptions` (`ganforge.sweep.options`)."""

import sys

import click

from ganforge.cli.declared import SectionedCommand, declared_options
from ganforge.cli.help import examples
from ganforge.sweep.options import SWEEP_OPTIONS


@click.command(
    cls=SectionedCommand,
    epilog=examples(
        "ganforge sweep --data digits.zip --outdir sweeps/digits --cfg tiny --kimg 200 --trials 20",
        "ganforge sweep --data faces.zip --outdir sweeps/faces --kimg 500 --space gamma=log:0.1..20 "
        "--space aug=ada --space batch=32 --parallel 4",
        "ganforge sweep --data faces.zip --outdir sweeps/faces --kimg 500 --storage postgresql://optuna@db.lab/sweeps",
    ),
)
@declared_options(SWEEP_OPTIONS)
def sweep(**options):
    """Tune `ganforge train` options (R1 gamma, augmentation, learning rates, ...) on your data: an Optuna study
    whose trials are ordinary run folders under DIR/trials/, the metric measured at every snapshot, trials that
    fall behind pruned. Rerunning the same command continues the study (an interrupted trial resumes from its
    checkpoint); with --storage, several machines share it. Writes DIR/report.html (also `ganforge report DIR`).
    Needs `pip install 'ganforge[sweep]'`."""
    from ganforge.sweep import SweepOptions
    from ganforge.sweep import sweep as run_sweep

    sys.exit(run_sweep(SweepOptions(**{name: value for name, value in options.items() if value is not None})))
