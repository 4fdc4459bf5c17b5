"""StyleGAN2 networks (Karras et al. 2020): Generator, Discriminator, and a per-layer summary table."""

from ganforge.nets.discriminator import Discriminator
from ganforge.nets.generator import Generator
from ganforge.nets.summary import summary

__all__ = ["Discriminator", "Generator", "summary"]
