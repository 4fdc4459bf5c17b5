"""Datasets: the `dataset build` tool, readers for folder / zip / fast archives, the sampler and the device loader."""

from ganforge.data.archive import ImageDataset, open_dataset
from ganforge.data.loader import make_loader
from ganforge.data.sampler import InfiniteSampler

__all__ = ["ImageDataset", "InfiniteSampler", "make_loader", "open_dataset"]
