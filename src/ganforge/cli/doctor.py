"""`ganforge doctor`: is this machine ready to train."""

from pathlib import Path

import click

from ganforge.cli.help import examples
from ganforge.config import AUTO_PRECISION, PRECISIONS


@click.command(epilog=examples("ganforge doctor", "ganforge doctor --json --quick --data faces256.zip"))
@click.option("--json", "as_json", is_flag=True, help="Print only the report, as JSON (schema: docs/doctor.md).")
@click.option("--data", type=click.Path(path_type=str), default=None, help="Dataset to open and time reading.")
@click.option("--outdir", type=click.Path(path_type=Path), default=Path("."), help="Where runs go: disk checked here.")
@click.option("--quick", is_flag=True, help="Shorter benchmarks (seconds instead of tens of seconds).")
@click.option(
    "--precision",
    type=click.Choice([*PRECISIONS, AUTO_PRECISION]),
    default=AUTO_PRECISION,
    help="Precision of the tiny StyleGAN2 check: the one you will train with (auto: what train's auto picks here).",
)
@click.pass_context
def doctor(ctx: click.Context, as_json: bool, data: str | None, outdir: Path, quick: bool, precision: str):
    """Check versions, driver, GPUs, distributed backends, disk and data; exit 0 ok, 1 warnings, 2 failures."""
    from ganforge import doctor as doctor_

    report = doctor_.run(doctor_.Options(data=data, outdir=outdir, quick=quick, precision=precision))
    click.echo(report.to_json() if as_json else report.render_table())
    ctx.exit(report.exit_code)
