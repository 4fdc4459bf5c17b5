"""The StyleGAN2 generator (Karras et al. 2020), config F / ADA "stylegan2": skip architecture by default, or the plain
("orig") or residual ("resnet") one of the paper's Fig. 7 and Table 2; optionally grown progressively (nets/growth.py).

Module and tensor names follow the official PyTorch release (mapping.fc0, synthesis.b64.conv0.affine, ...), so an
official snapshot maps one to one onto this module; docs/official-tensor-mapping.md lists the correspondence.
"""

import math

import torch
from torch import nn

from ganforge.limits import channels_at
from ganforge.nets.attention import SelfAttention
from ganforge.nets.growth import resized, staged
from ganforge.nets.layers import (
    LRELU_GAIN,
    REFERENCE_OPS,
    RESIDUAL_GAIN,
    Conv2dLayer,
    FullyConnectedLayer,
    aspect_config,
    block_dtype,
    check_arch,
    fir_kernel,
    fp16_min_resolution,
    modulated_conv2d,
    use_fused_modconv,
)
from ganforge.nets.mapping import MappingNetwork
from ganforge.nets.recompute import run_block
from ganforge.nets.winograd import worth_it

NOISE_MODES = ("random", "const", "none")
W_AVG_BETA = 0.995  # official w_avg tracking rate
MAPPING_LR_MULTIPLIER = 0.01  # StyleGAN Sec. 2 / App. C: the mapping network learns 100x slower


class SynthesisLayer(nn.Module):
    """Modulated, demodulated 3x3 conv (StyleGAN2 Fig. 2d), + per-pixel noise with a learned strength, bias, lrelu.

    The style affine's bias starts at 1 so every feature map is initially modulated by about 1. Its output is
    `size` = (resolution x rows, resolution x cols) of the network's aspect (rows, cols); so is the noise.
    """

    def __init__(self, in_channels, out_channels, w_dim, resolution, up=False, conv_clamp=None, aspect=(1, 1)):
        super().__init__()
        self.resolution, self.up, self.conv_clamp = resolution, up, conv_clamp
        self.size = (resolution * aspect[0], resolution * aspect[1])  # (H, W)
        self.affine = FullyConnectedLayer(w_dim, in_channels, bias_init=1.0)
        self.weight = nn.Parameter(torch.randn([out_channels, in_channels, 3, 3]))
        self.bias = nn.Parameter(torch.zeros([out_channels]))
        self.noise_strength = nn.Parameter(torch.zeros([]))
        self.register_buffer("noise_const", torch.randn(self.size))  # the fixed noise of "const"
        self.register_buffer("resample_filter", fir_kernel(), persistent=False)
        self.winograd = False  # the same-size convolution by Winograd's algorithm (set for CPU by the Generator)
        self.ops = REFERENCE_OPS  # the fused ops' implementation (set by nets.kernels.use_kernels)

    def forward(self, x: torch.Tensor, w: torch.Tensor, noise_mode: str = "random", gain: float = 1.0) -> torch.Tensor:
        """gain scales the output and the clamp (a "resnet" block's sqrt(1/2) on its second convolution)."""
        styles = self.affine(w)  # [N, in_channels]
        fused = use_fused_modconv(self.training, x)
        x = modulated_conv2d(
            x,
            self.weight,
            styles,
            up=self.up,
            fused=fused,
            resample_filter=self.resample_filter,
            fast=self.winograd,
            fir=self.ops.fir_filter,
        )
        if noise_mode == "random":
            noise = torch.randn([x.shape[0], 1, *self.size], device=x.device)
            x = x + (noise * self.noise_strength).to(x.dtype)
        elif noise_mode == "const":
            x = x + (self.noise_const * self.noise_strength).to(x.dtype)
        clamp = None if self.conv_clamp is None else self.conv_clamp * gain
        return self.ops.bias_act(x, self.bias, "lrelu", LRELU_GAIN * gain, clamp)

    def extra_repr(self) -> str:
        out_c, in_c = self.weight.shape[:2]
        size = "" if self.size[0] == self.size[1] else f", size={list(self.size)}"  # [H, W] of a non-square network
        return f"in={in_c}, out={out_c}, res={self.resolution}{size}, up={self.up}"


class ToRGBLayer(nn.Module):
    """Modulated 1x1 conv to image channels, without demodulation (StyleGAN2 Sec. 4.1, Fig. 7b skip outputs)."""

    def __init__(self, in_channels, img_channels, w_dim, conv_clamp=None):
        super().__init__()
        self.conv_clamp = conv_clamp
        self.affine = FullyConnectedLayer(w_dim, in_channels, bias_init=1.0)
        self.weight = nn.Parameter(torch.randn([img_channels, in_channels, 1, 1]))
        self.bias = nn.Parameter(torch.zeros([img_channels]))
        self.weight_gain = 1 / math.sqrt(in_channels)  # equalized lr; without demodulation it must be explicit
        self.ops = REFERENCE_OPS  # the fused ops' implementation (set by nets.kernels.use_kernels)

    def forward(self, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        styles = self.affine(w) * self.weight_gain
        fused = use_fused_modconv(self.training, x)
        x = modulated_conv2d(x, self.weight, styles, demodulate=False, fused=fused)
        return self.ops.bias_act(x, self.bias, "linear", 1.0, self.conv_clamp)


class SynthesisBlock(nn.Module):
    """One resolution: (learned 4x4 const | upsampling conv0), conv1; "skip": a toRGB added to the upsampled image,
    "orig" and "resnet": a toRGB in the last block only (in every block when `progressive`), "resnet": conv0 and
    conv1 beside a 1x1 upsampling path. With aspect (rows, cols) its features are resolution x rows by
    resolution x cols (the const 4 x rows by 4 x cols), as in community forks that train non-square images."""

    def __init__(self, in_channels, out_channels, w_dim, resolution, img_channels, use_fp16, conv_clamp,
                 architecture="skip", is_last=True, attention=False, progressive=False, aspect=(1, 1)):  # fmt: skip
        super().__init__()
        self.resolution, self.use_fp16 = resolution, use_fp16
        if in_channels == 0:
            self.const = nn.Parameter(torch.randn([out_channels, 4 * aspect[0], 4 * aspect[1]]))
        else:
            self.conv0 = SynthesisLayer(in_channels, out_channels, w_dim, resolution, up=True, conv_clamp=conv_clamp,
                                        aspect=aspect)  # fmt: skip
        self.conv1 = SynthesisLayer(out_channels, out_channels, w_dim, resolution, conv_clamp=conv_clamp,
                                    aspect=aspect)  # fmt: skip
        self.torgb = None
        if is_last or architecture == "skip" or progressive:
            self.torgb = ToRGBLayer(out_channels, img_channels, w_dim, conv_clamp=conv_clamp)
        self.skip = None
        if in_channels != 0 and architecture == "resnet":
            self.skip = Conv2dLayer(in_channels, out_channels, 1, bias=False, up=True)
        # Self-attention on the block's features, after its convolutions and before its toRGB: the next block's
        # modulated convolutions demodulate whatever statistics it leaves, and its residual gain starts at 0 (SAGAN)
        self.attn = SelfAttention(out_channels) if attention else None
        self.num_conv = 1 if in_channels == 0 else 2
        self.register_buffer("resample_filter", fir_kernel(), persistent=False)
        self.ops = REFERENCE_OPS  # the fused ops' implementation (set by nets.kernels.use_kernels)

    def forward(self, x, img, ws, noise_mode="random", force_fp32=False, image_gain=1.0, rgb_gain=1.0):
        """ws [N, num_conv + 1, w_dim]: one w per conv, then the toRGB's (shared with the next block's conv0).
        The image out is upsampled(img) x image_gain + toRGB(x) x rgb_gain; rgb_gain None: this block adds nothing
        (a growing network's stage and fade set both, SynthesisNetwork.image_gains)."""
        dtype = block_dtype(self.use_fp16, force_fp32, ws.device)
        if x is None:
            x = self.const.to(dtype).unsqueeze(0).repeat([ws.shape[0], 1, 1, 1])
            x = self.conv1(x, ws[:, 0], noise_mode)
        elif self.skip is not None:  # (residual + skip) x sqrt(1/2), as in the residual D (StyleGAN2 App. B)
            y = self.skip(x.to(dtype), gain=RESIDUAL_GAIN)
            x = self.conv0(x.to(dtype), ws[:, 0], noise_mode)
            x = y + self.conv1(x, ws[:, 1], noise_mode, gain=RESIDUAL_GAIN)
        else:
            x = self.conv0(x.to(dtype), ws[:, 0], noise_mode)
            x = self.conv1(x, ws[:, 1], noise_mode)
        if self.attn is not None:
            x = self.attn(x)
        if img is not None:
            img = self.ops.upsample2d(img, self.resample_filter)
            img = img if image_gain == 1 else img * image_gain
        if self.torgb is not None and rgb_gain is not None:
            y = self.torgb(x, ws[:, self.num_conv]).to(torch.float32)
            y = y if rgb_gain == 1 else y * rgb_gain
            img = y if img is None else img + y
        return x, img


class SynthesisNetwork(nn.Module):
    """ws [N, num_ws, w_dim] -> image [N, img_channels, resolution x rows, resolution x cols] (float32), where
    aspect = (rows, cols); blocks are named and sized in channels by the short side, `resolution`."""

    def __init__(self, w_dim, resolution, img_channels, channel_base, channel_max, num_fp16_res, conv_clamp,
                 architecture="skip", attention=(), progressive=False, aspect=(1, 1)):  # fmt: skip
        super().__init__()
        self.w_dim, self.resolution, self.img_channels = w_dim, resolution, img_channels
        self.architecture = architecture
        self.image_size = (resolution * aspect[0], resolution * aspect[1])  # (H, W)
        self.stage = (resolution, 1.0)  # (resolution, fade) of a progressive network's growth (nets/growth.py)
        self.block_resolutions = [2**i for i in range(2, int(math.log2(resolution)) + 1)]
        fp16_res = fp16_min_resolution(resolution, num_fp16_res)
        self.num_ws = 0
        for res in self.block_resolutions:
            in_channels = channels_at(res // 2, channel_base, channel_max) if res > 4 else 0
            out_channels = channels_at(res, channel_base, channel_max)
            block = SynthesisBlock(in_channels, out_channels, w_dim, res, img_channels, res >= fp16_res, conv_clamp,
                                   architecture, res == resolution, res in attention, progressive, aspect)  # fmt: skip
            setattr(self, f"b{res}", block)
            self.num_ws += block.num_conv
        self.num_ws += 1  # the last block's toRGB; every other "skip" toRGB shares the next block's first w
        self.grad_checkpoint = False  # recompute each block's activations in backward (a speed/memory switch)
        self.register_buffer("resample_filter", fir_kernel(), persistent=False)

    def forward(self, ws, noise_mode: str = "random", force_fp32: bool = False, full_size: bool = True):
        """full_size False: the image at the stage's resolution (what a growing network trains at); True: that
        image upsampled to the network's resolution, what every consumer of a generator expects."""
        assert noise_mode in NOISE_MODES, f"noise_mode must be one of {NOISE_MODES}, got {noise_mode!r}"
        assert ws.ndim == 3 and ws.shape[1:] == (self.num_ws, self.w_dim), f"ws: got {list(ws.shape)}"
        ws = ws.to(torch.float32)
        x = img = None
        w_idx = 0
        for res in self.block_resolutions[: self.block_resolutions.index(self.stage[0]) + 1]:
            block = getattr(self, f"b{res}")
            block_ws = ws[:, w_idx : w_idx + block.num_conv + 1]
            x, img = run_block(block, x, img, block_ws, noise_mode, force_fp32, *self.image_gains(res),
                               recompute=self.grad_checkpoint)  # fmt: skip
            w_idx += block.num_conv
        img = resized(img, self.resolution, self.resample_filter) if full_size else img  # short side to short side
        assert not full_size or img.shape[2:] == self.image_size, f"image: got {list(img.shape)}"
        return img

    def image_gains(self, res: int) -> tuple[float, float | None]:
        """(gain on the upsampled image coming in, gain on the block's toRGB or None for none) of block `res` at the
        stage. The newest resolution's toRGB is faded in (ProGAN Fig. 2b); a skip G sums every block's image, so it
        keeps the image coming in, while the others' image comes from one block, so the previous resolution's toRGB
        fades out by 1 - fade and no lower block makes one (every weight 1 once grown: the standard network)."""
        top, fade = self.stage
        if res == top:
            return (1.0 if self.architecture == "skip" else 1.0 - fade), fade
        if self.architecture == "skip" or (res == top // 2 and fade < 1):
            return 1.0, 1.0
        return 1.0, None


class Generator(nn.Module):
    """StyleGAN2 generator: mapping network z, c -> ws, then the synthesis network ws -> image.

    Args:
        resolution: output size, a power of two from 8 to 1024.
        img_channels: image channels (3 for RGB, 1 for grayscale, any number works).
        c_dim: number of classes (0 = unconditional); c is one-hot [N, c_dim].
        z_dim, w_dim: latent sizes (512 in the paper).
        channel_base, channel_max: feature maps at resolution r are min(channel_base // r, channel_max).
        mapping_layers: depth of the mapping network (8 in config F, 2 in the ADA CIFAR config).
        num_fp16_res: run this many top resolutions in fp16 (CUDA only; fp32 master weights are cast at use).
        conv_clamp: clamp conv outputs to +-conv_clamp (256 with fp16), or None.
        architecture: "skip" (config F), "orig" or "resnet" (limits.ARCHITECTURES).
        attention: the block resolutions (8 and up) whose features pass through self-attention (nets/attention.py).
        progressive: a toRGB at every resolution, so that the network can grow (nets/growth.py); stage: its growth
            stage [resolution, fade] (None: fully grown).
        aspect: (rows, cols), powers of two, one of them 1: a non-square image [resolution x rows, resolution x cols]
            (`resolution` is then its short side: 512 wide x 256 tall is resolution=256, aspect=(1, 2)); every
            block, the learned constant (4 x rows by 4 x cols) and the noise have that shape. Recorded in `config`
            only when not (1, 1).
    """

    has_w_space = True  # a mapping network: truncation towards w_avg and per-layer styles have a meaning
    generator = "stylegan2"  # the ModelConfig.generator a run of it names

    def __init__(self, resolution=32, img_channels=3, c_dim=0, z_dim=512, w_dim=512, channel_base=16384,
                 channel_max=512, mapping_layers=8, num_fp16_res=0, conv_clamp=None, architecture="skip",
                 attention=(), progressive=False, stage=None, aspect=(1, 1)):  # fmt: skip
        super().__init__()
        self._config = dict(resolution=resolution, img_channels=img_channels, c_dim=c_dim, z_dim=z_dim, w_dim=w_dim,
                            channel_base=channel_base, channel_max=channel_max, mapping_layers=mapping_layers,
                            num_fp16_res=num_fp16_res, conv_clamp=conv_clamp, architecture=architecture)  # fmt: skip
        self._config |= {"attention": list(attention)} if attention else {}  # recorded where there is any
        self._config |= {"progressive": True} if progressive else {}
        check_arch(**self._config, stage=stage, aspect=aspect)
        self._config |= aspect_config(aspect)  # recorded where not square
        self.z_dim, self.c_dim, self.w_dim = z_dim, c_dim, w_dim
        self.img_channels, self.resolution, self.aspect = img_channels, resolution, tuple(aspect)
        self.synthesis = SynthesisNetwork(w_dim, resolution, img_channels, channel_base, channel_max, num_fp16_res,
                                          conv_clamp, architecture, attention, progressive, self.aspect)  # fmt: skip
        self.image_size = self.synthesis.image_size  # (H, W)
        self.num_ws = self.synthesis.num_ws
        self.mapping = MappingNetwork(z_dim, c_dim, w_dim, mapping_layers, num_ws=self.num_ws, w_avg_beta=W_AVG_BETA,
                                      lr_multiplier=MAPPING_LR_MULTIPLIER)  # fmt: skip
        self.set_stage(stage)

    @property
    def config(self) -> dict:
        """JSON-serialisable constructor kwargs: Generator(**G.config) rebuilds the same architecture."""
        return dict(self._config)

    def set_stage(self, stage) -> None:
        """Grow to `stage` ([resolution, fade]; None: fully grown), which `config` records from now on."""
        self._config, self.synthesis.stage = staged(self._config, self.resolution, stage)

    def use_cpu_kernels(self, enabled: bool = True) -> None:
        """Run the same-size 3x3 convolutions large enough to gain by Winograd's algorithm (nets/winograd.py) that
        way: a choice for float32 on CPU, made once when the network is built for it (the numeric policy of
        training, or generate and metrics on CPU)."""
        for module in self.synthesis.modules():
            if isinstance(module, SynthesisLayer):
                module.winograd = enabled and not module.up and worth_it(module.weight, math.prod(module.size))

    def forward(self, z, c, psi=1.0, cutoff=None, noise_mode="random", force_fp32=False):
        """z [N, z_dim], c [N, c_dim] -> image [N, img_channels, *image_size] (resolution x rows by resolution x
        cols; square unless `aspect`), float32, about [-1, 1] (while growing: the stage's image, upsampled)."""
        ws = self.mapping(z, c, psi=psi, cutoff=cutoff)
        return self.synthesis(ws, noise_mode=noise_mode, force_fp32=force_fp32)
