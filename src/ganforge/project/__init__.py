"""`ganforge project`: real images into a generator's latent space, W or W+, with optional pivotal tuning.

    from ganforge.project import ProjectOptions, project
    summary = project(ProjectOptions(network="ffhq.pkl", targets=("me.jpg",), outdir="out", space="wplus"))

The names are loaded on first use: `ganforge --help` imports `ganforge.project.options` (and so this file), and must
not pay for importing torch.
"""

import importlib

_HOMES = {"ProjectOptions": "ganforge.project.options", "project": "ganforge.project.run"}

__all__ = list(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'ganforge.project' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
