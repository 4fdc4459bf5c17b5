"""The architecture of a run's networks as one typed record: the data's shape, the model section and the layers that
compute in reduced precision. Training makes it from its Config (`architecture_of`); a resume's validator and a
fine-tuning start make it from a checkpoint's stored fields (`Architecture.from_fields`), after checking them against
the fields' types. Each family turns it into its networks' constructor arguments (its record's `network_arguments`),
so no builder reads a Config's dotted field names."""

from collections.abc import Mapping
from dataclasses import dataclass

from ganforge.config import Config, ModelConfig, section_from_flat


@dataclass(frozen=True, kw_only=True)
class Architecture:
    resolution: int  # the images' side, or of non-square images the shorter one
    channels: int
    label_dim: int  # 0: unconditional
    aspect: tuple[int, int]  # (rows, columns) of the images in units of the short side: (1, 1) square
    model: ModelConfig  # the generator and its variants (layouts, attention, growth), widths, latents, D's group
    fp16_res: int  # the highest-resolution blocks that compute in reduced precision
    conv_clamp: float | None  # activations clamped to this where they do (None: not clamped)

    @classmethod
    def from_fields(cls, fields: Mapping) -> "Architecture":
        """The record of a Config's flattened fields (`model.channel_base`-style names, as checkpoints store them),
        every field present (a stored config's, checked, with the defaults of those it predates)."""
        return cls(
            resolution=fields["data.resolution"],
            channels=fields["data.channels"],
            label_dim=fields["data.label_dim"],
            aspect=tuple(fields["data.aspect"]),
            model=section_from_flat(ModelConfig, "model.", fields),
            fp16_res=fields["precision.fp16_res"],
            conv_clamp=fields["precision.conv_clamp"],
        )


def architecture_of(cfg: Config) -> Architecture:
    """The record of the networks `cfg` trains."""
    data = cfg.data
    return Architecture(
        resolution=data.resolution,
        channels=data.channels,
        label_dim=data.label_dim,
        aspect=tuple(data.aspect),
        model=cfg.model,
        fp16_res=cfg.precision.fp16_res,
        conv_clamp=cfg.precision.conv_clamp,
    )
