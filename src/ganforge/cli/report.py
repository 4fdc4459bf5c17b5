"""`ganforge report`: one self-contained HTML page per run. Its options are derived from the declarations on
`ReportOptions` (`ganforge.report.options`)."""

from pathlib import Path

import click

from ganforge.cli.declared import declared_options
from ganforge.cli.help import examples
from ganforge.option import given
from ganforge.report.options import REPORT_OPTIONS, ReportOptions


@click.command(
    epilog=examples(
        "ganforge report runs/00000-faces-auto-gpus1-batch32",
        "ganforge report runs/00000-faces-auto-gpus1-batch32 runs/00001-faces-auto-gpus1-batch64 --out compare.html",
        "ganforge report runs/00000-faces-auto-gpus1-batch32 --to mlflow --tracker-uri http://mlflow.lab:5000",
    )
)
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path))
@declared_options(REPORT_OPTIONS)
def report(runs: tuple[Path, ...], **options):
    """One self-contained HTML page of a run (summary, curves, sample grids, config, environment, alerts, files);
    with several runs their curves are overlaid; of a `ganforge sweep` folder, the sweep report (trials, curves,
    importances, the best trial's command). Opens offline in any browser."""
    from ganforge.report import write_report

    options = ReportOptions(**given(options))
    out, tracker = options.out, options.tracker
    if len(runs) == 1 and (runs[0] / "sweep.json").is_file() and tracker is None:  # a `ganforge sweep` folder
        from ganforge.sweep import write_sweep_report

        click.echo(f"wrote {write_sweep_report(runs[0], out=out)}")
        return
    options.check_upload(list(runs))
    click.echo(f"wrote {write_report(list(runs), out)}")
    if tracker is not None:
        from ganforge.track.upload import upload

        names = (options.tracker_uri, options.tracker_project, options.tracker_run_name)
        run_id = upload(runs[0], tracker, *names, artifacts=options.tracker_artifacts)
        click.echo(f"uploaded {runs[0]} to {tracker} as run {run_id}")
