"""Datasets: the `dataset build` tool, readers for folder / zip / fast archives, the sampler and the device loader.

The names are loaded on first use: `ganforge --help` imports `ganforge.data.options` (and so this file), and must
not pay for importing torch.
"""

from ganforge import names_on_first_use

_HOMES = {
    "ImageDataset": "ganforge.data.archive",
    "InfiniteSampler": "ganforge.data.sampler",
    "make_loader": "ganforge.data.loader",
    "open_dataset": "ganforge.data.archive",
}

__all__ = list(_HOMES)


__getattr__ = names_on_first_use(__name__, _HOMES)
