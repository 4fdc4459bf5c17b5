"""`ganforge doctor`: is this machine ready to train. Its options are derived from the declarations on
`doctor.Options` (`ganforge.doctor.options`)."""

import click

from ganforge.cli.declared import declared_options
from ganforge.cli.help import examples
from ganforge.doctor.options import DOCTOR_OPTIONS, Options
from ganforge.option import given


@click.command(epilog=examples("ganforge doctor", "ganforge doctor --json --quick --data faces256.zip"))
@declared_options(DOCTOR_OPTIONS)
@click.pass_context
def doctor(ctx: click.Context, **options):
    """Check versions, driver, GPUs, distributed backends, disk and data; exit 0 ok, 1 warnings, 2 failures."""
    from ganforge.doctor.command import run

    options = Options(**given(options))
    report = run(options)
    click.echo(report.to_json() if options.as_json else report.render_table())
    ctx.exit(report.exit_code)
