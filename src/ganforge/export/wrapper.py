"""The module that is exported: a generator with truncation, noise and the output format baked in, and plain tensor
inputs (z, then c for a conditional network, then one noise map per layer with `noise="input"`).

Both generator families run their shared-weight modulated convolution on CPU (per-sample scaling of activations
around one convolution, StyleGAN2 Eq. 1-3 regrouped), so the exported graph has static convolution weights, which
int8 quantization needs, and no batch size inside a grouped convolution, so the batch can stay dynamic.
"""

import dataclasses

import torch
from torch import nn

from ganforge.data.loader import to_uint8
from ganforge.errors import UserError
from ganforge.families import family_of
from ganforge.metrics.shapes import image_size
from ganforge.nets import Generator, R3GANGenerator, StyleGAN3Generator

NOISE_BUFFER = "noise_const"
MAX_DYNAMIC_BATCH = 1 << 16


@dataclasses.dataclass(frozen=True)
class TensorSpec:
    """One input or output of the exported model: name, shape ("batch" where it varies) and dtype."""

    name: str
    shape: tuple
    dtype: str
    meaning: str


class DeployableGenerator(nn.Module):
    """G(z[, c][, noise...]) -> image, with psi, the noise source and the output layout fixed at construction.

    Noise maps given as inputs replace the network's constant noise buffers for the call, so the same layers that
    add the fixed noise add the given one: [N, 1, H, W] maps of standard normal noise of each layer's size (non-square
    for a non-square network), as in training (StyleGAN Sec. 3.2).
    """

    def __init__(self, G: nn.Module, psi: float = 1.0, noise: str = "const", uint8: bool = False, batch=None):
        super().__init__()
        assert isinstance(G, (Generator, StyleGAN3Generator, R3GANGenerator)), type(G)
        if noise == "input" and not isinstance(G, Generator):
            title = family_of(G.generator).title
            raise UserError(f"--noise input: a {title} generator has no noise inputs; use --noise const")
        if psi != 1 and not G.has_w_space:
            raise UserError(
                f"--trunc {psi:g}: an R3GAN generator has no mapping network, so no average w to truncate towards; "
                "leave --trunc out"
            )
        self.G = G.eval()
        self.psi, self.noise, self.uint8 = psi, noise, uint8
        self.batch = "batch" if batch is None else batch
        self.noise_buffers = [n for n, _ in G.named_buffers() if n.endswith(NOISE_BUFFER)] if noise == "input" else []
        self.eval()

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        z = inputs[0]
        c = inputs[1] if self.G.c_dim else z.new_zeros([z.shape[0], 0])
        noise = inputs[1 + bool(self.G.c_dim) :]
        assert len(noise) == len(self.noise_buffers), (len(noise), self.noise_buffers)
        if noise:
            replaced = dict(zip(self.noise_buffers, noise, strict=True))
            img = torch.func.functional_call(self.G, replaced, (z, c), dict(psi=self.psi, noise_mode="const"))
        else:
            img = self.G(z, c, psi=self.psi, noise_mode="const")
        return to_uint8(img).permute(0, 2, 3, 1) if self.uint8 else img  # uint8: [N, H, W, C]

    def around(self, G: nn.Module, uint8: bool | None = None) -> "DeployableGenerator":
        """The same settings around another generator of the same architecture (and another output, if given)."""
        batch = None if self.batch == "batch" else self.batch
        return DeployableGenerator(G, self.psi, self.noise, self.uint8 if uint8 is None else uint8, batch)

    def inputs(self) -> list[TensorSpec]:
        G, n = self.G, self.batch
        specs = [TensorSpec("z", (n, G.z_dim), "float32", "latent, standard normal")]
        if G.c_dim:
            specs.append(TensorSpec("c", (n, G.c_dim), "float32", "class, one-hot"))
        for name in self.noise_buffers:
            size = tuple(self.G.get_buffer(name).shape)
            specs.append(TensorSpec(noise_input_name(name), (n, 1, *size), "float32", "noise, standard normal"))
        return specs

    def output(self) -> TensorSpec:
        """The image: [N, C, H, W] float32, or [N, H, W, C] uint8; H != W for a non-square StyleGAN2."""
        G, n, (height, width) = self.G, self.batch, image_size(self.G)
        if self.uint8:
            return TensorSpec("img", (n, height, width, G.img_channels), "uint8", "image, 0-255, channels last")
        return TensorSpec("img", (n, G.img_channels, height, width), "float32", "image, about -1 to 1")

    def dynamic_shapes(self, count: int):
        """torch.export's dynamic_shapes for `count` inputs: dimension 0 of all varies together, unless fixed."""
        if self.batch != "batch":
            return None
        batch = torch.export.Dim("batch", min=1, max=MAX_DYNAMIC_BATCH)
        return {"inputs": tuple({0: batch} for _ in range(count))}

    def example_inputs(self, count: int, generator: torch.Generator) -> tuple[torch.Tensor, ...]:
        """Inputs for `count` images drawn from `generator`: z ~ N(0, I), uniformly random classes, noise ~ N(0, I)."""
        specs = self.inputs()
        tensors = [torch.randn(count, self.G.z_dim, generator=generator)]
        if self.G.c_dim:
            classes = torch.randint(self.G.c_dim, [count], generator=generator)
            tensors.append(nn.functional.one_hot(classes, self.G.c_dim).to(torch.float32))
        tensors += [torch.randn(count, *spec.shape[1:], generator=generator) for spec in specs[len(tensors) :]]
        return tuple(tensors)


def noise_input_name(buffer: str) -> str:
    """synthesis.b8.conv0.noise_const -> noise_b8_conv0"""
    return "noise_" + "_".join(buffer.split(".")[1:-1])
