"""`ganforge export`: a deployable generator, written only if it passes its checks. Its options are derived from the
declarations on `ExportOptions` (`ganforge.export.options`)."""

import click

from ganforge.cli.declared import SectionedCommand, declared_options
from ganforge.cli.help import examples
from ganforge.export.options import EXPORT_OPTIONS


@click.command(
    cls=SectionedCommand,
    epilog=examples(
        "ganforge export --network snapshot.safetensors --out G.onnx --format onnx",
        "ganforge export --network snapshot.safetensors --out G-int8.onnx --precision int8 --keep-float auto",
        "ganforge export --network snapshot.safetensors --out G.pt2 --format pt2 --noise input --batch dynamic",
    ),
)
@declared_options(EXPORT_OPTIONS)
def export(**options):
    """A deployable generator (ONNX or torch.export), written only if it passes a pixel and FID check against the
    eager generator; exit 2 with the figures otherwise."""
    from ganforge.export import ExportOptions, export_network
    from ganforge.export.run import closing_note

    parsed = ExportOptions.parse(**options)
    click.echo(closing_note(export_network(parsed), parsed.out))
