"""`ganforge project`: real images into a generator's latent space, W or W+, with optional pivotal tuning.

    from ganforge.project import ProjectOptions, project
    summary = project(ProjectOptions(network="ffhq.pkl", targets=("me.jpg",), outdir="out", space="wplus"))

The names are loaded on first use: `ganforge --help` imports `ganforge.project.options` (and so this file), and must
not pay for importing torch.
"""

from ganforge import names_on_first_use

_HOMES = {"ProjectOptions": "ganforge.project.options", "project": "ganforge.project.run"}

__all__ = list(_HOMES)


__getattr__ = names_on_first_use(__name__, _HOMES)
