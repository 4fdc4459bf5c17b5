"""The networks a training Config describes: one mapping from its fields to the constructors, used to build them for
training and the bench, on the meta device by the resolver (to size the first checkpoint before anything is
allocated), and by the checkpoint validator (to know the tensors a checkpoint of that config must hold)."""

from collections.abc import Mapping

import torch

from ganforge.config import Config, flatten
from ganforge.errors import UserError
from ganforge.limits import MAX_CHANNEL_BASE, MAX_R3GAN_BLOCKS, MAX_R3GAN_WIDTH, MAX_RESOLUTION, shown
from ganforge.nets.discriminator import Discriminator
from ganforge.nets.generator import Generator
from ganforge.nets.layers import channels_at
from ganforge.nets.r3gan import R3GANDiscriminator, R3GANGenerator, stage_resolutions
from ganforge.nets.stylegan3 import StyleGAN3Generator

Networks = tuple[Generator | StyleGAN3Generator | R3GANGenerator, Discriminator | R3GANDiscriminator]


def network_arguments(fields: Mapping) -> tuple[dict, dict]:
    """(G's constructor arguments, D's) from a Config's flattened fields (`loss.gamma`-style names, as checkpoints
    store them); G's include `generator` ("stylegan2", "stylegan3-t", "stylegan3-r" or "r3gan"), StyleGAN2's G and D
    their layout (`architecture`), where they attend (`attention`) and whether they can grow (`progressive`)."""
    if fields["model.generator"] == "r3gan":
        return _r3gan_arguments(fields)
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
    growing = {"progressive": True} if fields.get("model.grow") is True else {}  # older configs have no such field
    aspect = list(fields.get("data.aspect", [1, 1]))  # as `growing`; square networks are built without the argument
    if generator == "stylegan2" and aspect != [1, 1]:  # the other families take square images only
        common |= {"aspect": aspect}
    if generator != "stylegan2":
        mapping |= dict(config=generator.removeprefix("stylegan3-"), num_layers=fields["model.synthesis_layers"])
    else:
        mapping |= dict(architecture=fields["model.g_arch"], attention=list(fields["model.g_attn"]))
        mapping |= growing
    d_arguments = dict(mbstd_group_size=fields["model.mbstd_group"], architecture=fields["model.d_arch"],
                       attention=list(fields["model.d_attn"]), **common, **growing)  # fmt: skip
    return {"generator": generator, **common, **mapping}, d_arguments


def _r3gan_arguments(fields: Mapping) -> tuple[dict, dict]:
    """R3GAN's stages from the Config: widths min(channel_base / res, channel_max) as StyleGAN's, each stage's
    convolution grouped in width / group_channels groups; the class embedding is z_dim wide in G and as wide as the
    4x4 stage in D (as released)."""
    problems = [
        f"{key}={shown(fields.get(key))}: must be an integer from 1 to {high}"
        for key, high in (("data.resolution", MAX_RESOLUTION), ("model.channel_base", MAX_CHANNEL_BASE),
                          ("model.channel_max", MAX_R3GAN_WIDTH), ("model.group_channels", MAX_R3GAN_WIDTH),
                          ("model.blocks_per_stage", MAX_R3GAN_BLOCKS))
        if type(fields.get(key)) is not int or not 1 <= fields[key] <= high
    ]  # fmt: skip
    if problems:  # the values below are computed from these, so they are checked first (a stored config is untrusted)
        raise UserError(*problems)
    resolution = fields["data.resolution"]
    widths = [channels_at(res, fields["model.channel_base"], fields["model.channel_max"]) for res in
              stage_resolutions(resolution)]  # fmt: skip
    stages = dict(
        resolution=resolution,
        img_channels=fields["data.channels"],
        c_dim=fields["data.label_dim"],
        widths=widths,
        cardinalities=[max(width // fields["model.group_channels"], 1) for width in widths],
        blocks=[fields["model.blocks_per_stage"]] * len(widths),
        num_fp16_res=fields["precision.fp16_res"],
    )
    g = dict(generator="r3gan", z_dim=fields["model.z_dim"], embed_dim=fields["model.z_dim"], **stages)
    return g, dict(embed_dim=widths[0], **stages)


def build_networks_from(g_arguments: dict, d_arguments: dict) -> Networks:
    """G and D from `network_arguments`, on the current default device, initialised from the current RNG state."""
    g_arguments = dict(g_arguments)
    family = g_arguments.pop("generator")
    if family == "r3gan":
        return R3GANGenerator(**g_arguments), R3GANDiscriminator(**d_arguments)
    kind = StyleGAN3Generator if family != "stylegan2" else Generator
    return kind(**g_arguments), Discriminator(**d_arguments)


def make_networks(cfg: Config) -> Networks:
    """G (StyleGAN2, the alias-free StyleGAN3, or R3GAN's) and D with the Config's architecture and fp16 layers, on
    the current default device, initialised from the current RNG state."""
    return build_networks_from(*network_arguments(flatten(cfg.to_dict())))


def frozen_parameters(G: torch.nn.Module, D: Discriminator, freeze_d: int, freeze_g_mapping: bool) -> dict[str, set]:
    """The parameter names training holds constant, by network: D's first `freeze_d` layers counted from the input
    (--freeze-d) and, with `freeze_g_mapping`, G's whole mapping network (--freeze-g-mapping), so that W stays the
    pretrained latent space. They get no gradient, no optimiser state and no gradient sync."""
    mapping = {name for name, _ in G.named_parameters() if name.startswith("mapping.")} if freeze_g_mapping else set()
    return {"G": mapping, "D": D.frozen_parameters(freeze_d)}
