"""R3GAN's generator and discriminator (Huang et al. 2024, "The GAN is dead; long live the GAN! A Modern GAN Baseline",
Sec. 3, Fig. 3; the released configurations). A plain residual ConvNet: no mapping network, no style modulation, no
noise inputs, no minibatch stddev, no normalisation; conditioning by a class embedding concatenated to z in G and by
a projection (Miyato & Koyama 2018) in D.

A network is described stage by stage from 4x4 upwards: `widths`, `cardinalities` and `blocks` hold one value per
resolution 4, 8, ..., resolution (D uses the same lists from the top down, as the released configurations do).

G presents the interface of ganforge's StyleGAN generators where it has a meaning: `mapping(z, c)` is the input layer
(z concatenated with the class embedding, as one "w" [N, 1, w_dim]; there is no W space to truncate in), `synthesis(ws)`
the rest. Stages in the top `num_fp16_res` resolutions compute in bfloat16, as the released configurations do
(without clamping, which bfloat16's range does not need); weights stay float32 and are cast at use.
"""

import math

import torch
from torch import nn

from ganforge.errors import UserError
from ganforge.limits import RESOLUTIONS, resolution_ok, stage_resolutions
from ganforge.nets.r3gan_layers import (
    Convolution,
    DiscriminativeBasis,
    Downsample,
    GenerativeBasis,
    ResidualBlock,
    Upsample,
    msr_weight,
)
from ganforge.nets.recompute import run_block


def check_stages(resolution, widths, cardinalities, blocks, expansion, kernel) -> None:
    """One UserError listing every inconsistency of a stage description (the per-value limits are checked before,
    by ganforge.limits, for a file's architecture)."""
    if not resolution_ok(resolution):
        raise UserError(f"resolution: {resolution!r} is not {RESOLUTIONS}; resize the dataset")
    stages = len(stage_resolutions(resolution))
    problems = [
        f"{name}: {len(values)} values for {stages} stages (4x4 to {resolution}x{resolution})"
        for name, values in (("widths", widths), ("cardinalities", cardinalities), ("blocks", blocks))
        if len(values) != stages
    ]
    problems += [
        f"cardinalities: {groups} groups do not divide the {width} channels of the stage at {res}x{res}"
        for res, width, groups in zip(stage_resolutions(resolution), widths, cardinalities, strict=False)  # see above
        if width % groups or width * expansion % groups
    ]
    if kernel % 2 == 0:
        problems.append(f"kernel: {kernel} is even; a 'same' convolution needs an odd kernel (the released one is 3)")
    if problems:
        raise UserError(*problems)


def stage_dtype(reduced: bool, force_fp32: bool) -> torch.dtype:
    """bfloat16 for a reduced-precision stage (as released; bfloat16's float32 range needs no clamping)."""
    return torch.bfloat16 if reduced and not force_fp32 else torch.float32


class Stage(nn.Module):
    """One resolution: a transition layer and residual blocks, in that order in G and the reverse in D."""

    def __init__(self, transition: nn.Module, blocks: list[ResidualBlock], transition_first: bool, reduced: bool):
        super().__init__()
        self.transition, self.blocks = transition, nn.ModuleList(blocks)
        self.transition_first, self.reduced = transition_first, reduced

    def forward(self, x: torch.Tensor, force_fp32: bool) -> torch.Tensor:
        x = x.to(stage_dtype(self.reduced, force_fp32))
        x = self.transition(x) if self.transition_first else x
        for block in self.blocks:
            x = block(x)
        return x if self.transition_first else self.transition(x)


def _reduced(resolution: int, num_fp16_res: int) -> list[bool]:
    stages = stage_resolutions(resolution)
    return [i >= len(stages) - num_fp16_res for i in range(len(stages))]


class R3GANSynthesis(nn.Module):
    """The generator after its input vector: [N, 1, w_dim] -> image [N, img_channels, resolution, resolution]."""

    def __init__(self, w_dim, resolution, img_channels, widths, cardinalities, blocks, expansion, kernel, num_fp16_res):
        super().__init__()
        total_blocks, reduced = sum(blocks), _reduced(resolution, num_fp16_res)
        stages = []
        for i, (width, groups, count) in enumerate(zip(widths, cardinalities, blocks, strict=True)):
            transition = GenerativeBasis(w_dim, width) if i == 0 else Upsample(widths[i - 1], width)
            body = [ResidualBlock(width, groups, expansion, kernel, total_blocks) for _ in range(count)]
            stages.append(Stage(transition, body, transition_first=True, reduced=reduced[i]))
        self.stages = nn.ModuleList(stages)
        self.to_rgb = Convolution(widths[-1], img_channels, 1)
        self.num_ws, self.grad_checkpoint = 1, False

    def forward(self, ws: torch.Tensor, noise_mode: str = "random", force_fp32: bool = False) -> torch.Tensor:
        x = ws[:, 0]  # [N, w_dim]; noise_mode is accepted for the common interface: R3GAN has no noise inputs
        for stage in self.stages:
            x = run_block(stage, x, force_fp32, recompute=self.grad_checkpoint)
        return self.to_rgb(x).float()


class R3GANInput(nn.Module):
    """z [N, z_dim] (and one-hot c [N, c_dim]) -> the generator's input vector as ws [N, 1, z_dim + embed_dim]."""

    def __init__(self, z_dim: int, c_dim: int, embed_dim: int):
        super().__init__()
        self.embed = msr_weight((embed_dim, c_dim), 1.0) if c_dim else None

    def forward(self, z, c, psi=1.0, cutoff=None, update_w_avg=False) -> torch.Tensor:
        if psi != 1:
            raise UserError(
                f"truncation psi={psi:g}: an R3GAN generator has no mapping network, so there is no W space and no "
                "average w to truncate towards; leave the truncation at 1"
            )
        x = z if self.embed is None else torch.cat([z, nn.functional.linear(c.to(z.dtype), self.embed)], dim=1)
        return x[:, None]


class R3GANGenerator(nn.Module):
    """R3GAN's generator: z [N, z_dim], one-hot c [N, c_dim] -> image [N, img_channels, resolution, resolution],
    float32. `embed_dim`: the class embedding's size (the released conditional configurations use z_dim); 0 without
    classes."""

    has_w_space = False  # z goes straight to the image: no mapping network, no average w, no per-layer styles
    generator = "r3gan"  # the ModelConfig.generator a run of it names

    def __init__(self, resolution=32, img_channels=3, c_dim=0, z_dim=64, widths=(), cardinalities=(), blocks=(),
                 expansion=2, kernel=3, embed_dim=0, num_fp16_res=0):  # fmt: skip
        super().__init__()
        widths, cardinalities, blocks = tuple(widths), tuple(cardinalities), tuple(blocks)
        check_stages(resolution, widths, cardinalities, blocks, expansion, kernel)
        embed_dim = embed_dim if c_dim else 0
        self._config = dict(resolution=resolution, img_channels=img_channels, c_dim=c_dim, z_dim=z_dim,
                            widths=list(widths), cardinalities=list(cardinalities), blocks=list(blocks),
                            expansion=expansion, kernel=kernel, embed_dim=embed_dim,
                            num_fp16_res=num_fp16_res)  # fmt: skip
        self.z_dim, self.c_dim, self.w_dim = z_dim, c_dim, z_dim + embed_dim
        self.img_channels, self.resolution = img_channels, resolution
        self.mapping = R3GANInput(z_dim, c_dim, embed_dim)
        self.synthesis = R3GANSynthesis(self.w_dim, resolution, img_channels, widths, cardinalities, blocks,
                                        expansion, kernel, num_fp16_res)  # fmt: skip
        self.num_ws = 1

    @property
    def config(self) -> dict:
        """JSON-serialisable constructor kwargs: R3GANGenerator(**G.config) rebuilds the same architecture."""
        return dict(self._config)

    def use_cpu_kernels(self, enabled: bool = True) -> None:
        """R3GAN's convolutions are 1x1 or grouped, which Winograd's 3x3 path does not serve: nothing to choose."""

    def forward(self, z, c, psi=1.0, cutoff=None, noise_mode="random", force_fp32=False):
        return self.synthesis(self.mapping(z, c, psi=psi), force_fp32=force_fp32)


class R3GANDiscriminator(nn.Module):
    """R3GAN's discriminator: image [N, img_channels, R, R], one-hot c [N, c_dim] -> logits [N, 1], float32.
    Conditional: the last layer gives `embed_dim` features, projected on the class embedding (the released
    configurations use G's widths[0])."""

    def __init__(self, resolution=32, img_channels=3, c_dim=0, widths=(), cardinalities=(), blocks=(), expansion=2,
                 kernel=3, embed_dim=0, num_fp16_res=0):  # fmt: skip
        super().__init__()
        widths, cardinalities, blocks = tuple(widths), tuple(cardinalities), tuple(blocks)
        check_stages(resolution, widths, cardinalities, blocks, expansion, kernel)
        embed_dim = embed_dim if c_dim else 0
        self._config = dict(resolution=resolution, img_channels=img_channels, c_dim=c_dim, widths=list(widths),
                            cardinalities=list(cardinalities), blocks=list(blocks), expansion=expansion,
                            kernel=kernel, embed_dim=embed_dim, num_fp16_res=num_fp16_res)  # fmt: skip
        self.resolution, self.img_channels, self.c_dim = resolution, img_channels, c_dim
        total_blocks, reduced = sum(blocks), _reduced(resolution, num_fp16_res)
        self.from_rgb = Convolution(img_channels, widths[-1], 1)
        stages = []
        for i in reversed(range(len(widths))):  # from the image's resolution down to 4x4
            body = [
                ResidualBlock(widths[i], cardinalities[i], expansion, kernel, total_blocks) for _ in range(blocks[i])
            ]
            transition = Downsample(widths[i], widths[i - 1]) if i else DiscriminativeBasis(widths[0], embed_dim or 1)
            stages.append(Stage(transition, body, transition_first=False, reduced=reduced[i]))
        self.stages = nn.ModuleList(stages)
        self.embed = msr_weight((embed_dim, c_dim), 1 / math.sqrt(embed_dim)) if c_dim else None
        self.grad_checkpoint = False

    @property
    def config(self) -> dict:
        """JSON-serialisable constructor kwargs: R3GANDiscriminator(**D.config) rebuilds the same architecture."""
        return dict(self._config)

    def layers_from_input(self) -> list[str]:
        """D's layers counted from the input for --freeze-d: the input convolution, then each block and transition
        from the top resolution down (the last stage's basis, the output layer, is not counted)."""
        names = ["from_rgb"]
        for i, stage in enumerate(self.stages):
            names += [f"stages.{i}.blocks.{j}" for j in range(len(stage.blocks))]
            names += [f"stages.{i}.transition"] if i < len(self.stages) - 1 else []
        return names

    def frozen_parameters(self, layers: int) -> set[str]:
        """The parameter names of the first `layers` layers counted from the input (`layers_from_input`)."""
        frozen = tuple(f"{name}." for name in self.layers_from_input()[:layers])
        return {name for name, _ in self.named_parameters() if name.startswith(frozen)}

    def use_cpu_kernels(self, enabled: bool = True) -> None:
        """Nothing to choose on CPU (see R3GANGenerator.use_cpu_kernels)."""

    def forward(self, img: torch.Tensor, c: torch.Tensor, force_fp32: bool = False, batches: int = 1) -> torch.Tensor:
        """`batches` is accepted for the common interface: without minibatch statistics, stacked batches are judged
        each on its own anyway."""
        shape = (self.img_channels, self.resolution, self.resolution)
        assert img.ndim == 4 and img.shape[1:] == shape, f"img: expected [N, *{shape}], got {list(img.shape)}"
        x = self.from_rgb(img.to(stage_dtype(self.stages[0].reduced, force_fp32)))
        for stage in self.stages:
            x = run_block(stage, x, force_fp32, recompute=self.grad_checkpoint)
        x = x.float()
        if self.embed is not None:  # projection: <features, embedding of c>
            x = (x * nn.functional.linear(c.float(), self.embed)).sum(dim=1, keepdim=True)
        return x
