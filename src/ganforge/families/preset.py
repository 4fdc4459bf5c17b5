"""One row of the `ganforge train --cfg` table: the values that depend on the preset. Each family holds its own rows
(`families/<name>/traits.py`); `ganforge.presets` lists them all. Like `ganforge.config`, this imports neither torch
nor click (`ganforge --help` reads the preset names)."""

from dataclasses import dataclass


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
    # ADA's speed (kimg for p to go from 0 to 1): a row whose run is shorter than the paper's 500 kimg gives its own
    ada_kimg: float | None = None
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
