"""The alias-free StyleGAN3 generator (Karras et al. 2021), configs T (translation) and R (rotation equivariance).

Config T: 3x3 convolutions and separable Kaiser filters. Config R: 1x1 convolutions, twice the channels, and
radially symmetric downsampling filters in all but the critically sampled layers (Sec. 3.2, App. F). Module and
tensor names follow the official release (mapping.fc0, synthesis.input.affine, synthesis.L0_36_512.weight, ...);
docs/official-tensor-mapping.md lists them.

Equivariance is exercised through the input layer's transform: `input_transform(translate, angle)` gives the
matrix that moves the generated image, and `G(z, c, transform=...)` or `G.synthesis(ws, transform=...)` uses it.
"""

import math

import torch
from torch import nn

from ganforge.errors import UserError
from ganforge.nets.generator import MAPPING_LR_MULTIPLIER, NOISE_MODES
from ganforge.nets.layers import check_arch
from ganforge.nets.mapping import MappingNetwork
from ganforge.nets.stylegan3_layers import SynthesisInput, SynthesisLayer, layer_bands

CONFIGS = ("t", "r")
NUM_LAYERS = 14  # synthesis layers, not counting the Fourier input and toRGB (App. F); the default
NUM_CRITICAL = 2  # the last layers are critically sampled: cutoff at Nyquist, for sharp details
OUTPUT_SCALE = 0.25  # toRGB's output is scaled down so that images start in a sensible range
W_AVG_BETA = 0.998  # the official StyleGAN3 w_avg tracking rate


def input_transform(translate=(0.0, 0.0), angle: float = 0.0) -> torch.Tensor:
    """The input transform [3, 3] that moves the image by `translate` (x right, y down, in image widths) and
    rotates it by `angle` radians (counter-clockwise on screen), about the image centre.

    The input layer maps output pixels to where they are sampled, so this is the inverse of the image motion.
    """
    c, s = math.cos(angle), math.sin(angle)
    motion = torch.tensor([[c, s, translate[0]], [-s, c, translate[1]], [0.0, 0.0, 1.0]], dtype=torch.float64)
    return torch.linalg.inv(motion).to(torch.float32)


class SynthesisNetwork(nn.Module):
    """ws [N, num_ws, w_dim] -> image [N, img_channels, resolution, resolution] (float32).

    ws[:, 0] drives the Fourier input's learned transform, ws[:, i + 1] layer L{i}; num_ws = num_layers + 2.
    """

    def __init__(self, w_dim, resolution, img_channels, channel_base, channel_max, conv_kernel, radial, num_fp16_res,
                 conv_clamp, num_layers=NUM_LAYERS):  # fmt: skip
        super().__init__()
        self.w_dim, self.resolution, self.img_channels = w_dim, resolution, img_channels
        self.num_ws = num_layers + 2
        bands = layer_bands(resolution, img_channels, channel_base, channel_max, num_layers, NUM_CRITICAL)
        self.input = SynthesisInput(w_dim, bands[0])
        self.layer_names = []
        for idx, out in enumerate(bands):
            layer = SynthesisLayer(
                w_dim, bands[max(idx - 1, 0)], out, is_torgb=idx == num_layers,
                critically_sampled=idx >= num_layers - NUM_CRITICAL,
                use_fp16=out.sampling_rate * 2**num_fp16_res > resolution,  # the top num_fp16_res octaves
                conv_kernel=conv_kernel, radial=radial, conv_clamp=conv_clamp,
            )  # fmt: skip
            name = f"L{idx}_{out.size}_{out.channels}"
            setattr(self, name, layer)
            self.layer_names.append(name)

    def forward(self, ws, noise_mode="random", force_fp32=False, transform=None, magnitude_ema_beta=None):
        """noise_mode is accepted for the StyleGAN2 interface; the alias-free generator has no noise inputs.

        transform: [3, 3] or [N, 3, 3] input transform (see `input_transform`), else the input's buffer.
        magnitude_ema_beta: during training, the decay with which every layer updates its magnitude_ema first.
        """
        assert noise_mode in NOISE_MODES, f"noise_mode must be one of {NOISE_MODES}, got {noise_mode!r}"
        assert ws.ndim == 3 and ws.shape[1:] == (self.num_ws, self.w_dim), f"ws: got {list(ws.shape)}"
        ws = ws.to(torch.float32).unbind(dim=1)
        x = self.input(ws[0], transform)
        for name, w in zip(self.layer_names, ws[1:], strict=True):
            x = getattr(self, name)(x, w, force_fp32=force_fp32, magnitude_ema_beta=magnitude_ema_beta)
        return (x * OUTPUT_SCALE).to(torch.float32)


class StyleGAN3Generator(nn.Module):
    """StyleGAN3 generator: mapping network z, c -> ws, then the alias-free synthesis network ws -> image.

    Args:
        resolution: output size, a power of two from 8 to 1024.
        img_channels: image channels (3 for RGB, 1 for grayscale, any number works).
        c_dim: number of classes (0 = unconditional); c is one-hot [N, c_dim].
        z_dim, w_dim: latent sizes (512 in the paper).
        channel_base, channel_max: a layer with cutoff f_c has min(channel_base / 2 / f_c, channel_max) channels;
            config R doubles both internally (pass the values of config T, as the official training setup does).
        mapping_layers: depth of the mapping network (2 in the paper).
        config: "t" (translation equivariance) or "r" (translation and rotation equivariance).
        num_fp16_res: run the layers whose sampling rate is within this many octaves of the resolution in fp16
            (CUDA only; fp32 master weights are cast at use). Official training uses 4.
        conv_clamp: clamp every layer's activations to +-conv_clamp after the leaky ReLU (official: 256), or None.
        num_layers: synthesis layers between the Fourier input and toRGB (14 in the paper and in every official
            network); fewer make a cheap network for tests and CPU demos, with the same cutoff schedule end points.
    """

    has_w_space = True  # a mapping network: truncation towards w_avg and per-layer styles have a meaning

    def __init__(self, resolution=32, img_channels=3, c_dim=0, z_dim=512, w_dim=512, channel_base=32768,
                 channel_max=512, mapping_layers=2, config="t", num_fp16_res=0, conv_clamp=None,
                 num_layers=NUM_LAYERS):  # fmt: skip
        super().__init__()
        arch = dict(resolution=resolution, img_channels=img_channels, c_dim=c_dim, z_dim=z_dim, w_dim=w_dim,
                    channel_base=channel_base, channel_max=channel_max, mapping_layers=mapping_layers,
                    num_fp16_res=num_fp16_res, conv_clamp=conv_clamp)  # fmt: skip
        problems = []
        if config not in CONFIGS:
            problems.append(f"config: {config!r} is not a StyleGAN3 configuration; choose 't' or 'r'")
        if not isinstance(num_layers, int) or num_layers <= NUM_CRITICAL:
            problems.append(f"num_layers: {num_layers!r} must be an integer > {NUM_CRITICAL} (14 in the paper)")
        try:
            check_arch(**arch)
        except UserError as err:
            problems = [*err.problems, *problems]
        if problems:
            raise UserError(*problems)
        self._config = arch | {"config": config, "num_layers": num_layers}
        self.z_dim, self.c_dim, self.w_dim = z_dim, c_dim, w_dim
        self.img_channels, self.resolution = img_channels, resolution
        widen = 2 if config == "r" else 1
        self.synthesis = SynthesisNetwork(w_dim, resolution, img_channels, channel_base * widen, channel_max * widen,
                                          conv_kernel=1 if config == "r" else 3, radial=config == "r",
                                          num_fp16_res=num_fp16_res, conv_clamp=conv_clamp,
                                          num_layers=num_layers)  # fmt: skip
        self.num_ws = self.synthesis.num_ws
        self.mapping = MappingNetwork(z_dim, c_dim, w_dim, mapping_layers, num_ws=self.num_ws, w_avg_beta=W_AVG_BETA,
                                      lr_multiplier=MAPPING_LR_MULTIPLIER)  # fmt: skip

    @property
    def generator(self) -> str:
        """The ModelConfig.generator a run of it names: stylegan3-t or stylegan3-r."""
        return f"stylegan3-{self._config['config']}"

    @property
    def config(self) -> dict:
        """JSON-serialisable constructor kwargs: StyleGAN3Generator(**G.config) rebuilds the same architecture."""
        return dict(self._config)

    def use_cpu_kernels(self, enabled: bool = True) -> None:
        """Nothing to choose: the alias-free layers' convolutions are not the same-size 3x3 ones Winograd's algorithm
        speeds up (the StyleGAN2 networks' `use_cpu_kernels`)."""

    def forward(self, z, c, psi=1.0, cutoff=None, noise_mode="random", force_fp32=False, transform=None):
        """z [N, z_dim], c [N, c_dim] -> image [N, img_channels, resolution, resolution], float32, about [-1, 1]."""
        ws = self.mapping(z, c, psi=psi, cutoff=cutoff)
        return self.synthesis(ws, noise_mode=noise_mode, force_fp32=force_fp32, transform=transform)
