"""One row of the `ganforge train --cfg` table: the values that depend on the preset. Each family holds its own rows
(`families/<name>/traits.py`); `ganforge.presets` lists them all. Like `ganforge.config`, this imports neither torch
nor click (`ganforge --help` reads the preset names).

A row is a partial overlay of the Config: a field declared with `sets(...)` goes as it is to the Config fields it
names (`Preset.overlay`); the others are inputs of the resolver's derivations (`ganforge.train.resolver`), which sit
above the row, under what the user gave."""

from dataclasses import MISSING, dataclass, field, fields


def sets(*paths: str, default=None):
    """A row field whose value (when not None) is the value of the Config fields `paths` (dotted names)."""
    return field(default=default, metadata={"sets": paths})


@dataclass(frozen=True, kw_only=True)
class Preset:
    """One row of the preset table. None in the first group means "derive it from the resolution" (the `auto` row,
    see `ganforge.train.resolver.derive`); None for `d_lr` means "lr" and for `blur_fade_kimg` "200 x batch / 32 kimg"
    (StyleGAN3 App. D); None in the others keeps the default of the Config field they set."""

    batch: int | None = sets("schedule.batch")
    mbstd: int | None = None  # minibatch-stddev group size (at most the per-GPU batch)
    channel_base: int | None = sets("model.channel_base")
    lr: float | None = sets("optim.g_lr")
    gamma: float | None = sets("loss.gamma")
    ema_kimg: float | None = None
    ema_rampup: float | None = None
    mapping_layers: int = sets("model.mapping_layers", default=MISSING)
    kimg: float  # rounded to whole batches
    resolution: int | None = None  # the only resolution the preset is made for; None: any
    channel_max: int = sets("model.channel_max", default=512)
    z_dim: int = sets("model.z_dim", "model.w_dim", default=512)
    pl_weight: float | None = sets("loss.pl_weight")
    style_mixing: float | None = sets("loss.style_mixing")
    tick_kimg: float = 4.0  # rounded to whole batches
    snap: int = sets("schedule.snap", default=50)
    d_lr: float | None = None
    # ModelConfig.generator: "stylegan3-t" / "stylegan3-r" for Karras et al. 2021
    generator: str | None = sets("model.generator")
    # StyleGAN2's layouts of G and D (config F's; ModelConfig.g_arch/d_arch), where the row's networks have the choice
    g_arch: str = "skip"
    d_arch: str = "resnet"
    synthesis_layers: int | None = sets("model.synthesis_layers")  # StyleGAN3 only
    # layers in fp16 (R3GAN: stages in bf16) under --precision fp16 (bf16) without --fp16-res
    fp16_res: int | None = None
    # ADA's speed (kimg for p to go from 0 to 1): a row whose run is shorter than the paper's 500 kimg gives its own
    ada_kimg: float | None = sets("augment.ada_kimg")
    blur_sigma: float | None = None  # D blur at the start, fading to 0 over blur_fade_kimg
    blur_fade_kimg: float | None = None
    # R3GAN only (ModelConfig.group_channels/blocks_per_stage, ScheduleConfig.anneal_kimg and the final values it
    # anneals to; the augmentation the rows use instead of ADA)
    group_channels: int | None = sets("model.group_channels")
    blocks_per_stage: int | None = sets("model.blocks_per_stage")
    anneal_kimg: float | None = sets("schedule.anneal_kimg")
    gamma_final: float | None = None
    lr_min_ratio: float | None = sets("optim.lr_min_ratio")
    beta2: float | None = sets("optim.beta2")
    beta2_final: float | None = sets("optim.beta2_final")
    aug: str | None = sets("augment.mode")
    aug_p: float | None = None
    aug_pipe: str | None = sets("augment.pipe")

    def overlay(self) -> dict:
        """The row's values by the Config field each sets (dotted names), None values left out."""
        values = {}
        for row_field in fields(self):
            value = getattr(self, row_field.name)
            if value is not None:
                values |= dict.fromkeys(row_field.metadata.get("sets", ()), value)
        return values
