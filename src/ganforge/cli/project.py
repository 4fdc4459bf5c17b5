"""`ganforge project`: real images into a generator's latent space (W or W+), with optional pivotal tuning. Its options
are derived from the declarations on `ProjectOptions` (`ganforge.project.options`)."""

import click

from ganforge.cli.declared import SectionedCommand, declared_options
from ganforge.cli.help import examples
from ganforge.option import given
from ganforge.project.options import PROJECT_OPTIONS


@click.command(
    cls=SectionedCommand,
    epilog=examples(
        "ganforge project --network ffhq.pkl --target me.jpg --outdir out",
        "ganforge project --network ffhq.pkl --target a.png --target b.png --outdir out --space wplus --tune-g 350",
        "ganforge project --network ffhq.pkl --target me.jpg --outdir out --perceptual vgg16.pt --video",
    ),
)
@declared_options(PROJECT_OPTIONS)
def project(**options):
    """Project real images into a generator's latent space: projected_w.npz in the official layout (for
    `ganforge generate --projected-w`), the images side by side, a record of the distances, PSNR and SSIM."""
    from ganforge.project import ProjectOptions
    from ganforge.project import project as run_project
    from ganforge.project.run import closing_note

    parsed = ProjectOptions(**given(options))
    click.echo(closing_note(run_project(parsed), parsed.outdir))
