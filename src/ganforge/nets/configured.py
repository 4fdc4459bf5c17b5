"""The networks a training Config describes: one mapping from its fields to the constructors, used to build them for
training and the bench, on the meta device by the resolver (to size the first checkpoint before anything is
allocated), and by the checkpoint validator (to know the tensors a checkpoint of that config must hold)."""

from collections.abc import Mapping

import torch

from ganforge.config import Config, flatten
from ganforge.nets.discriminator import Discriminator
from ganforge.nets.generator import Generator
from ganforge.nets.stylegan3 import StyleGAN3Generator


def network_arguments(fields: Mapping) -> tuple[dict, dict]:
    """(G's constructor arguments, D's) from a Config's flattened fields (`loss.gamma`-style names, as checkpoints
    store them); G's include `generator` ("stylegan2", "stylegan3-t" or "stylegan3-r")."""
    common = dict(
        resolution=fields["data.resolution"],
        img_channels=fields["data.channels"],
        c_dim=fields["data.label_dim"],
        channel_base=fields["model.channel_base"],
        channel_max=fields["model.channel_max"],
        num_fp16_res=fields["precision.fp16_res"],
        conv_clamp=fields["precision.conv_clamp"],
    )
    mapping = dict(
        z_dim=fields["model.z_dim"], w_dim=fields["model.w_dim"], mapping_layers=fields["model.mapping_layers"]
    )
    generator = fields["model.generator"]
    if generator != "stylegan2":
        mapping |= dict(config=generator.removeprefix("stylegan3-"), num_layers=fields["model.synthesis_layers"])
    return {"generator": generator, **common, **mapping}, {"mbstd_group_size": fields["model.mbstd_group"], **common}


def build_networks_from(g_arguments: dict, d_arguments: dict) -> tuple[Generator | StyleGAN3Generator, Discriminator]:
    """G and D from `network_arguments`, on the current default device, initialised from the current RNG state."""
    g_arguments = dict(g_arguments)
    kind = StyleGAN3Generator if g_arguments.pop("generator") != "stylegan2" else Generator
    return kind(**g_arguments), Discriminator(**d_arguments)


def make_networks(cfg: Config) -> tuple[Generator | StyleGAN3Generator, Discriminator]:
    """G (StyleGAN2 or the alias-free StyleGAN3) and D with the Config's architecture and fp16 layers, on the current
    default device, initialised from the current RNG state."""
    return build_networks_from(*network_arguments(flatten(cfg.to_dict())))


def frozen_parameters(G: torch.nn.Module, D: Discriminator, freeze_d: int, freeze_g_mapping: bool) -> dict[str, set]:
    """The parameter names training holds constant, by network: D's first `freeze_d` layers counted from the input
    (--freeze-d) and, with `freeze_g_mapping`, G's whole mapping network (--freeze-g-mapping), so that W stays the
    pretrained latent space. They get no gradient, no optimiser state and no gradient sync."""
    mapping = {name for name, _ in G.named_parameters() if name.startswith("mapping.")} if freeze_g_mapping else set()
    return {"G": mapping, "D": D.frozen_parameters(freeze_d)}
