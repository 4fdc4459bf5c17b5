"""`ganforge report`: one self-contained HTML page per run."""

from pathlib import Path

import click

from ganforge.cli.help import examples
from ganforge.config.sections import TRACKER_ARTIFACTS, TRACKERS


@click.command(
    epilog=examples(
        "ganforge report runs/00000-faces-auto-gpus1-batch32",
        "ganforge report runs/00000-faces-auto-gpus1-batch32 runs/00001-faces-auto-gpus1-batch64 --out compare.html",
        "ganforge report runs/00000-faces-auto-gpus1-batch32 --to mlflow --tracker-uri http://mlflow.lab:5000",
    )
)
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Page to write.  [default: RUN/report.html; with several runs, report.html here]",
)
@click.option(
    "--to",
    "tracker",
    type=click.Choice(TRACKERS),
    help="Also upload the run (its config, ticks, metrics, sample grids, alerts and this page) to an experiment "
    "tracker, as `train --tracker` would have sent it: for runs that trained where no tracker could be reached.",
)
@click.option("--tracker-uri", metavar="URI", help="With --to: the tracker's server, as `train --tracker-uri`.")
@click.option("--tracker-project", metavar="NAME", help="With --to: MLflow experiment or W&B project.")
@click.option("--tracker-run-name", metavar="NAME", help="With --to: the run's name.  [default: the folder's name]")
@click.option(
    "--tracker-artifacts",
    type=click.Choice(TRACKER_ARTIFACTS),
    default="none",
    show_default=True,
    help="With --to: also upload the snapshots, or the snapshots and checkpoints.",
)
def report(runs: tuple[Path, ...], out: Path | None, tracker, tracker_uri, tracker_project, tracker_run_name,
           tracker_artifacts):  # fmt: skip
    """One self-contained HTML page of a run (summary, curves, sample grids, config, environment, alerts, files);
    with several runs their curves are overlaid; of a `ganforge sweep` folder, the sweep report (trials, curves,
    importances, the best trial's command). Opens offline in any browser."""
    from ganforge.errors import UserError
    from ganforge.report import write_report

    if len(runs) == 1 and (runs[0] / "sweep.json").is_file() and tracker is None:  # a `ganforge sweep` folder
        from ganforge.sweep import write_sweep_report

        click.echo(f"wrote {write_sweep_report(runs[0], out=out)}")
        return
    if tracker is not None and (len(runs) != 1 or out is not None):
        raise UserError(f"--to {tracker}: uploads one run folder, with its RUN/report.html; pass one RUN, no --out")
    click.echo(f"wrote {write_report(list(runs), out)}")
    if tracker is not None:
        from ganforge.track.upload import upload

        names = (tracker_uri, tracker_project, tracker_run_name)
        run_id = upload(runs[0], tracker, *names, artifacts=tracker_artifacts)
        click.echo(f"uploaded {runs[0]} to {tracker} as run {run_id}")
