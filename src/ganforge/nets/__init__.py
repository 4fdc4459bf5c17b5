"""Generator networks: StyleGAN2 (Karras et al. 2020) and the alias-free StyleGAN3 (Karras et al. 2021); the StyleGAN2
residual Discriminator serves both; and a per-layer summary table."""

from ganforge.nets.discriminator import Discriminator
from ganforge.nets.generator import Generator
from ganforge.nets.stylegan3 import StyleGAN3Generator, input_transform
from ganforge.nets.summary import summary

__all__ = ["Discriminator", "Generator", "StyleGAN3Generator", "input_transform", "summary"]
