"""`ganforge generate`: images, grids, interpolations and style mixing from a generator, from seeds or projected
latents, for a class or label vectors of a conditional network. Its options are derived from the declarations on
`GenerateOptions` (`ganforge.generate.options`)."""

import click

from ganforge.cli.declared import SectionedCommand, declared_options
from ganforge.cli.help import examples
from ganforge.generate.options import GENERATE_OPTIONS


@click.command(
    cls=SectionedCommand,
    epilog=examples(
        "ganforge generate --network ffhq.pkl --outdir out --seeds 0-7 --trunc 0.7",
        "ganforge generate --network snapshot.safetensors --outdir out --seeds 0-15 --grid 4x4",
        "ganforge generate --network snapshot.safetensors --outdir out --seeds 0-8 --interp 120 --size 256 --fps 30",
        "ganforge generate --network ffhq.pkl --outdir out --projected-w a/projected_w.npz --projected-w "
        "b/projected_w.npz --interp 60",
        "ganforge generate --network attributes.safetensors --outdir out --seeds 0-3 --label-file labels.csv",
    ),
)
@declared_options(GENERATE_OPTIONS)
def generate(**options):
    """Images, a grid, a looping interpolation (or a grid of them) or a style-mixing table, from seeds or projected
    latents; the same command gives the same files."""
    from ganforge.generate import GenerateOptions
    from ganforge.generate.run import closing_note
    from ganforge.generate.run import generate as run_generate

    parsed = GenerateOptions.parse(**options)
    click.echo(closing_note(run_generate(parsed), parsed.outdir))
