"""What the rest of ganforge asks of a model family, as one record: its names, its preset rows, which variants and
precisions its networks have, and how a run of it is described. Each family holds its record in
`families/<name>/traits.py`; code outside a family asks the record (`family_of`), never tests a family's name.

Torch-free, on the ground floor, so that the configuration, the presets and `ganforge --help` can ask it.
"""

from collections.abc import Callable
from dataclasses import dataclass

from ganforge.families.preset import Preset


@dataclass(frozen=True, kw_only=True)
class Family:
    name: str  # the family's folder, and the `architecture` a snapshot records
    title: str  # in messages: "StyleGAN2", "StyleGAN3", "R3GAN"
    generators: tuple[str, ...]  # the ModelConfig.generator values it trains
    presets: dict[str, Preset]  # its --cfg rows
    g_layouts: bool  # G has --g-arch and --g-attn (StyleGAN2's layouts, self-attention)
    d_layouts: bool  # D has --d-arch and --d-attn (the StyleGAN2 D, which StyleGAN3 trains with too)
    grows: bool  # --grow (progressive growing)
    non_square: bool  # trains non-square images (an aspect in its networks)
    reduced_mode: str  # the --precision its --fp16-res layers compute in: "fp16" (with clamping) or "bf16"
    clamps: bool  # activations clamped where layers run in fp16 (conv_clamp)
    max_channels: int  # the widest layer its files may describe (limits.py)
    recomputes: bool  # --grad-checkpoint can recompute its blocks' activations
    magnitude_ema: bool  # its layers track their inputs' magnitudes, at a decay that follows the batch (StyleGAN3)
    loss: str  # its phases: "stylegan2" (non-saturating loss, lazy R1 and path length) or "relativistic" (RpGAN)
    ema_from_trained_batch: bool  # `auto` derives the EMA half-life from the batch trained with (StyleGAN3)
    gamma_per_pixel: float  # the `auto` R1 weight heuristic: gamma = gamma_per_pixel x res^2 / batch
    describe: Callable  # (cfg) -> lines: its networks and loss, for the start of a run and --dry-run
    # (an Architecture, ganforge.config.architecture) -> (G's constructor arguments with "generator", D's): how a
    # config builds its networks (nets.configured builds them from these)
    network_arguments: Callable
    # (G's constructor arguments, D's or None) -> the Config fields a pretrained network of the family decides
    pretrained_fields: Callable
    # (G's constructor arguments, whether --cfg was given, the file) -> what keeps a run from training it
    pretrained_problems: Callable
    d_shares: tuple[str, ...]  # D's constructor arguments derived from the same fields as G's (they must agree)
    # `ganforge sweep`'s default search space, as `--space` entries (ganforge.sweep.space): what is worth tuning
    # on a user's own data for this family
    sweep_space: tuple[str, ...]

    def older_layouts(self) -> dict:
        """The layouts a config written before they could be chosen was built with: StyleGAN2's G with skips and
        the StyleGAN2 D with residual blocks (config F's), where the family has these choices."""
        return {
            **({"model.g_arch": "skip"} if self.g_layouts else {}),
            **({"model.d_arch": "resnet"} if self.d_layouts else {}),
        }
