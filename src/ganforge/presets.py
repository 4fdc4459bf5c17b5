"""The preset table of `ganforge train --cfg`: one keyword row per named configuration.

A row states the values that depend on `--cfg`; `ganforge.train.resolver` fills in what a row leaves to be derived
and is the only reader. Like `ganforge.config`, this module imports neither torch nor click (`ganforge --help` reads
the preset names).
"""

from dataclasses import dataclass

DEFAULT_PRESET = "auto"


@dataclass(frozen=True, kw_only=True)
class Preset:
    """One row of the preset table. None in the first group means "derive it from the resolution" (the `auto` row,
    see `ganforge.train.resolver.derive`); None for `d_lr` means "lr" and for `blur_fade_kimg` "200 x batch / 32 kimg"
    (StyleGAN3 App. D); None in the others keeps the default of the Config field they set."""

    batch: int | None = None
    mbstd: int | None = None  # minibatch-stddev group size
    channel_base: int | None = None
    lr: float | None = None
    gamma: float | None = None
    ema_kimg: float | None = None
    ema_rampup: float | None = None
    mapping_layers: int
    kimg: float
    resolution: int | None = None  # the only resolution the preset is made for; None: any
    channel_max: int = 512
    z_dim: int = 512
    pl_weight: float | None = None
    style_mixing: float | None = None
    tick_kimg: float = 4.0
    snap: int = 50
    d_lr: float | None = None
    generator: str | None = None  # ModelConfig.generator: "stylegan3-t" / "stylegan3-r" for Karras et al. 2021
    # StyleGAN2's layouts of G and D (config F's; ModelConfig.g_arch/d_arch), where the row's networks have the choice
    g_arch: str = "skip"
    d_arch: str = "resnet"
    synthesis_layers: int | None = None  # StyleGAN3 only
    fp16_res: int | None = (
        None  # layers in fp16 (R3GAN: stages in bf16) under --precision fp16 (bf16) without --fp16-res
    )
    blur_sigma: float | None = None  # D blur at the start, fading to 0 over blur_fade_kimg
    blur_fade_kimg: float | None = None
    # R3GAN only (ModelConfig.group_channels/blocks_per_stage, ScheduleConfig.anneal_kimg and the final values it
    # anneals to; the augmentation the rows use instead of ADA)
    group_channels: int | None = None
    blocks_per_stage: int | None = None
    anneal_kimg: float | None = None
    gamma_final: float | None = None
    lr_min_ratio: float | None = None
    beta2: float | None = None
    beta2_final: float | None = None
    aug: str | None = None
    aug_p: float | None = None
    aug_pipe: str | None = None


# The official configurations (Karras et al. 2020, "Training GANs with limited data", App. D and its released
# `cfg_specs`): batch, minibatch-stddev group, channel base (fmaps x 32768), learning rate, R1 gamma, EMA half-life in
# kimg, EMA ramp-up, mapping depth. `auto` derives most of them from the resolution; `tiny` is a small, fast CPU
# setting. StyleGAN3 (Karras et al. 2021, App. D and its released training setup): the `auto` derivations with G lr
# 0.0025, D lr 0.002, no path length or style mixing, fp16 in the top 4 octaves under --precision fp16; R adds the
# blurred-discriminator warm-up (sigma 10). `tiny3` is `tiny` with a StyleGAN3-T generator.
_SG3 = dict(lr=0.0025, d_lr=0.002, ema_rampup=0.05, mapping_layers=2, pl_weight=0.0, style_mixing=0.0, fp16_res=4,
            synthesis_layers=14)  # fmt: skip
# R3GAN (Huang et al. 2024, Sec. 4 and the released configurations): widths min(24576 / res, 768) with 8 channels per
# group (ImageNet: 1536 wide, 16 per group), 2 blocks per stage, z of 64 dimensions; Adam with beta1 0 and beta2 0.9
# annealed to 0.99, lr 2e-4 annealed to 5e-5, gamma (R1 and R2 each) annealed to a tenth, EMA half-life and the
# augmentation's p annealed from 0, all by a cosine over 20 Mimg (ImageNet: 200 Mimg); the augmentation is ADA's
# blit, geometric and colour transforms with cutout at a fixed, annealed p; under bf16 the top 3 stages (4 from 64 px)
# compute in bfloat16 and the rest in float32, without autocast (`fp16_res`). The released setup trains until stopped;
# these rows end at the annealing's end (--kimg trains longer).
_R3GAN = dict(generator="r3gan", channel_base=24576, channel_max=768, group_channels=8, blocks_per_stage=2,
              mapping_layers=0, z_dim=64, lr=2e-4, lr_min_ratio=0.25, beta2=0.9, beta2_final=0.99,
              anneal_kimg=20000.0, kimg=20000, aug="fixed", aug_pipe="bgcc", pl_weight=0.0, style_mixing=0.0,
              mbstd=1, tick_kimg=4.0, snap=50)  # fmt: skip
_R3GAN_IMAGENET = dict(batch=4096, channel_max=1536, group_channels=16, ema_kimg=50000.0, anneal_kimg=200000.0,
                       kimg=200000)  # fmt: skip
PRESETS = {
    "auto": Preset(ema_rampup=0.05, mapping_layers=2, kimg=25000),
    "stylegan2": Preset(batch=32, mbstd=4, channel_base=32768, lr=0.002, gamma=10.0, ema_kimg=10.0, mapping_layers=8,
                        kimg=25000),
    "paper256": Preset(batch=64, mbstd=8, channel_base=16384, lr=0.0025, gamma=1.0, ema_kimg=20.0, mapping_layers=8,
                       kimg=25000, resolution=256),
    "paper512": Preset(batch=64, mbstd=8, channel_base=32768, lr=0.0025, gamma=0.5, ema_kimg=20.0, mapping_layers=8,
                       kimg=25000, resolution=512),
    "paper1024": Preset(batch=32, mbstd=4, channel_base=32768, lr=0.002, gamma=2.0, ema_kimg=10.0, mapping_layers=8,
                        kimg=25000, resolution=1024),
    "cifar": Preset(batch=64, mbstd=32, channel_base=32768, lr=0.0025, gamma=0.01, ema_kimg=500.0, ema_rampup=0.05,
                    mapping_layers=2, kimg=100000, resolution=32, pl_weight=0.0, style_mixing=0.0, d_arch="orig"),
    "tiny": Preset(batch=16, mbstd=4, channel_base=512, lr=0.0025, gamma=0.05, ema_kimg=1.0, ema_rampup=0.05,
                   mapping_layers=2, kimg=40, channel_max=64, z_dim=64, tick_kimg=0.8, snap=5),
    "stylegan3-t": Preset(**_SG3, kimg=25000, generator="stylegan3-t"),
    "stylegan3-r": Preset(**_SG3, kimg=25000, generator="stylegan3-r", blur_sigma=10.0),
    **{
        f"r3gan-{name}": Preset(**_R3GAN | row)
        for name, row in dict(
            cifar10=dict(resolution=32, fp16_res=3, batch=512, ema_kimg=5000.0, aug_p=0.55, gamma=0.05,
                         gamma_final=0.005),
            ffhq64=dict(resolution=64, fp16_res=4, batch=256, ema_kimg=500.0, aug_p=0.3, gamma=2.0, gamma_final=0.2),
            ffhq256=dict(resolution=256, fp16_res=4, batch=256, ema_kimg=500.0, aug_p=0.3, gamma=150.0,
                         gamma_final=15.0),
            imagenet32=_R3GAN_IMAGENET | dict(resolution=32, fp16_res=3, channel_base=49152, aug_p=0.5, gamma=0.5,
                            gamma_final=0.05),
            imagenet64=_R3GAN_IMAGENET | dict(resolution=64, fp16_res=4, channel_base=98304, aug_p=0.4, gamma=1.0,
                            gamma_final=0.1),
        ).items()
    },
    "tiny-r3gan": Preset(**_R3GAN | dict(channel_base=512, channel_max=64, blocks_per_stage=1, anneal_kimg=40.0,
                         kimg=40, fp16_res=2, batch=16, ema_kimg=1.0, aug_p=0.2, gamma=0.05, gamma_final=0.005,
                         z_dim=32, tick_kimg=0.8, snap=5)),
    "tiny3": Preset(**_SG3 | dict(synthesis_layers=4), batch=16, mbstd=4, channel_base=512, gamma=0.05, ema_kimg=1.0,
                    kimg=40, channel_max=16, z_dim=64, tick_kimg=0.8, snap=5, generator="stylegan3-t"),
}  # fmt: skip


def auto_batch(resolution: int, world_size: int) -> int:
    """The `auto` preset's global batch (Karras et al. 2020, App. D): 4096 / resolution images per process, at most
    32 per process and 64 in all, at least one per process."""
    return max(min(world_size * min(4096 // resolution, 32), 64), world_size)
