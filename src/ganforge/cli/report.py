"""`ganforge report`: one self-contained HTML page per run."""

from pathlib import Path

import click

from ganforge.cli.help import examples


@click.command(
    epilog=examples(
        "ganforge report runs/00000-faces-auto-gpus1-batch32",
        "ganforge report runs/00000-faces-auto-gpus1-batch32 runs/00001-faces-auto-gpus1-batch64 --out compare.html",
    )
)
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Page to write.  [default: RUN/report.html; with several runs, report.html here]",
)
def report(runs: tuple[Path, ...], out: Path | None):
    """One self-contained HTML page of a run (summary, curves, sample grids, config, environment, alerts, files);
    with several runs their curves are overlaid. Opens offline in any browser."""
    from ganforge.report import write_report

    click.echo(f"wrote {write_report(list(runs), out)}")
