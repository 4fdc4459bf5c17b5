"""The networks a training Config describes: one mapping from its fields to the constructors, used to build them for
training and the bench, on the meta device by the resolver (to size the first checkpoint before anything is
allocated), and by the checkpoint validator (to know the tensors a checkpoint of that config must hold)."""

import torch

from ganforge.config import Config
from ganforge.config.architecture import Architecture, architecture_of
from ganforge.families import family_of
from ganforge.nets.discriminator import Discriminator
from ganforge.nets.generator import Generator
from ganforge.nets.r3gan import R3GANDiscriminator, R3GANGenerator
from ganforge.nets.stylegan3 import StyleGAN3Generator

Networks = tuple[Generator | StyleGAN3Generator | R3GANGenerator, Discriminator | R3GANDiscriminator]


def network_arguments(arch: Architecture) -> tuple[dict, dict]:
    """(G's constructor arguments, D's) of the networks `arch` describes, as the generator's family builds them (its
    `network_arguments`); G's include `generator`."""
    return family_of(arch.model.generator).network_arguments(arch)


# Each family's generator and discriminator classes, by the family's name.
NETWORK_CLASSES = {
    "stylegan2": (Generator, Discriminator),
    "stylegan3": (StyleGAN3Generator, Discriminator),
    "r3gan": (R3GANGenerator, R3GANDiscriminator),
}


def build_networks_from(g_arguments: dict, d_arguments: dict) -> Networks:
    """G and D from `network_arguments`, on the current default device, initialised from the current RNG state."""
    g_arguments = dict(g_arguments)
    G, D = NETWORK_CLASSES[family_of(g_arguments.pop("generator")).name]
    return G(**g_arguments), D(**d_arguments)


def make_networks(cfg: Config) -> Networks:
    """G (StyleGAN2, the alias-free StyleGAN3, or R3GAN's) and D with the Config's architecture and fp16 layers, on
    the current default device, initialised from the current RNG state."""
    return build_networks_from(*network_arguments(architecture_of(cfg)))


def frozen_parameters(G: torch.nn.Module, D: Discriminator, freeze_d: int, freeze_g_mapping: bool) -> dict[str, set]:
    """The parameter names training holds constant, by network: D's first `freeze_d` layers counted from the input
    (--freeze-d) and, with `freeze_g_mapping`, G's whole mapping network (--freeze-g-mapping), so that W stays the
    pretrained latent space. They get no gradient, no optimiser state and no gradient sync."""
    mapping = {name for name, _ in G.named_parameters() if name.startswith("mapping.")} if freeze_g_mapping else set()
    return {"G": mapping, "D": D.frozen_parameters(freeze_d)}
