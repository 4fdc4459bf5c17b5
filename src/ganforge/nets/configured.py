"""The networks a training Config describes, built by one function for training, the resolver (on the meta device,
to size the first checkpoint before anything is allocated) and the bench."""

from ganforge.config import Config
from ganforge.nets.discriminator import Discriminator
from ganforge.nets.generator import Generator
from ganforge.nets.stylegan3 import StyleGAN3Generator


def make_networks(cfg: Config) -> tuple[Generator | StyleGAN3Generator, Discriminator]:
    """G (StyleGAN2 or the alias-free StyleGAN3) and D with the Config's architecture and fp16 layers, on the current
    default device, initialised from the current RNG state."""
    m, d, p = cfg.model, cfg.data, cfg.precision
    common = dict(resolution=d.resolution, img_channels=d.channels, c_dim=d.label_dim, channel_base=m.channel_base,
                  channel_max=m.channel_max, num_fp16_res=p.fp16_res, conv_clamp=p.conv_clamp)  # fmt: skip
    mapping = dict(z_dim=m.z_dim, w_dim=m.w_dim, mapping_layers=m.mapping_layers)
    if m.generator == "stylegan2":
        G = Generator(**mapping, **common)
    else:
        G = StyleGAN3Generator(**mapping, **common, config=m.generator.removeprefix("stylegan3-"),
                               num_layers=m.synthesis_layers)  # fmt: skip
    return G, Discriminator(mbstd_group_size=m.mbstd_group, **common)
