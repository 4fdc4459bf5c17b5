"""Generator networks: StyleGAN2 (Karras et al. 2020) and the alias-free StyleGAN3 (Karras et al. 2021); the StyleGAN2
residual Discriminator serves both; R3GAN's generator and discriminator (Huang et al. 2024); and a per-layer summary
table."""

from ganforge.nets.discriminator import Discriminator
from ganforge.nets.generator import Generator
from ganforge.nets.r3gan import R3GANDiscriminator, R3GANGenerator
from ganforge.nets.stylegan3 import StyleGAN3Generator, input_transform
from ganforge.nets.summary import summary

__all__ = [
    "Discriminator",
    "Generator",
    "R3GANDiscriminator",
    "R3GANGenerator",
    "StyleGAN3Generator",
    "input_transform",
    "summary",
]
