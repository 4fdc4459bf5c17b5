"""StyleGAN3's record: configs T and R, their preset rows, and what its generator can do."""

from ganforge.families.preset import Preset
from ganforge.families.record import Family
from ganforge.families.stylegan2.traits import (
    STYLEGAN_D_SHARES,
    describe_stylegan,
    no_problems,
    stylegan_arguments,
    stylegan_pretrained_fields,
)
from ganforge.limits import MAX_CHANNELS

# Karras et al. 2021, App. D and its released training setup: the `auto` derivations with G lr 0.0025, D lr 0.002,
# no path length or style mixing, fp16 in the top 4 octaves under --precision fp16; R adds the blurred-discriminator
# warm-up (sigma 10). `tiny3` is `tiny` with a StyleGAN3-T generator.
_ROW = dict(lr=0.0025, d_lr=0.002, ema_rampup=0.05, mapping_layers=2, pl_weight=0.0, style_mixing=0.0, fp16_res=4,
            synthesis_layers=14)  # fmt: skip
PRESETS = {
    "stylegan3-t": Preset(**_ROW, kimg=25000, generator="stylegan3-t"),
    "stylegan3-r": Preset(**_ROW, kimg=25000, generator="stylegan3-r", blur_sigma=10.0),
    "tiny3": Preset(**_ROW | dict(synthesis_layers=4), batch=16, mbstd=4, channel_base=512, gamma=0.05, ema_kimg=1.0,
                    kimg=40, channel_max=16, z_dim=64, tick_kimg=0.8, snap=5, generator="stylegan3-t", ada_kimg=20.0),
}  # fmt: skip


def network_arguments(arch) -> tuple[dict, dict]:
    """The alias-free G of config T or R with its synthesis layer count, and the StyleGAN2 D it trains with."""
    common, mapping, d = stylegan_arguments(arch)
    generator = arch.model.generator
    layers = dict(config=generator.removeprefix("stylegan3-"), num_layers=arch.model.synthesis_layers)
    return {"generator": generator, **common, **mapping, **layers}, d


STYLEGAN3 = Family(
    name="stylegan3",
    title="StyleGAN3",
    generators=("stylegan3-t", "stylegan3-r"),
    presets=PRESETS,
    g_layouts=False,
    d_layouts=True,  # it trains with StyleGAN2's D
    grows=False,
    non_square=False,
    reduced_mode="fp16",
    clamps=True,
    max_channels=MAX_CHANNELS,
    # its layers update their input-magnitude statistics in forward, which recomputation would repeat
    recomputes=False,
    magnitude_ema=True,
    loss="stylegan2",
    ema_from_trained_batch=True,
    # 5x ADA's heuristic gives at batch 32 the values its released setup recommends (2 at 256x256, 8.2 at 512x512,
    # 32.8 at 1024x1024, the paper's FFHQ value); it chooses gamma per dataset
    gamma_per_pixel=0.001,
    describe=describe_stylegan,
    network_arguments=network_arguments,
    pretrained_fields=stylegan_pretrained_fields,
    pretrained_problems=no_problems,
    d_shares=STYLEGAN_D_SHARES,
    sweep_space=(
        "gamma=log:0.1..100",
        "aug=ada|noaug",
        "target=0.4..0.8",
        "glr=log:0.0005..0.005",
        "dlr=log:0.0005..0.005",
        "mirror=true|false",
    ),
)
