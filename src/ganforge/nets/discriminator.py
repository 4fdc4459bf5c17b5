"""The StyleGAN2 discriminator (Karras et al. 2020, Fig. 7c): residual blocks by default, or the plain ("orig") or
skip ones of the paper's Fig. 7 and Table 2; minibatch stddev, projection head; optionally grown progressively
(nets/growth.py).

Module and tensor names follow the official PyTorch release (b256.fromrgb, b4.fc, mapping.embed, ...);
docs/official-tensor-mapping.md lists the correspondence.
"""

import math

import torch
from torch import nn

from ganforge.limits import channels_at
from ganforge.nets.attention import SelfAttention
from ganforge.nets.growth import staged
from ganforge.nets.layers import (
    REFERENCE_OPS,
    RESIDUAL_GAIN,
    Conv2dLayer,
    FullyConnectedLayer,
    aspect_config,
    block_dtype,
    check_arch,
    fir_kernel,
    fp16_min_resolution,
)
from ganforge.nets.mapping import MappingNetwork
from ganforge.nets.recompute import run_block
from ganforge.nets.winograd import worth_it

CMAP_LAYERS = 8  # the official D embeds c with a full-depth mapping network, whatever G's depth
GENERATOR_ONLY_KWARGS = ("z_dim", "w_dim", "mapping_layers")


class DiscriminatorBlock(nn.Module):
    """One resolution: [fromRGB], conv0 3x3, conv1 3x3 with 2x FIR down; "resnet": beside a 1x1 down skip; "skip":
    every block adds fromRGB of the image downsampled to its resolution ("orig" and "resnet": the top block only, or
    every block when `progressive`, used where the image enters a growing D)."""

    def __init__(self, in_channels, tmp_channels, out_channels, img_channels, use_fp16, conv_clamp,
                 architecture="resnet", attention=False, progressive=False):  # fmt: skip
        super().__init__()
        self.use_fp16 = use_fp16
        self.fromrgb = None
        if in_channels == 0 or architecture == "skip" or progressive:
            self.fromrgb = Conv2dLayer(img_channels, tmp_channels, 1, "lrelu", conv_clamp=conv_clamp)
        self.conv0 = Conv2dLayer(tmp_channels, tmp_channels, 3, "lrelu", conv_clamp=conv_clamp)
        self.conv1 = Conv2dLayer(tmp_channels, out_channels, 3, "lrelu", down=True, conv_clamp=conv_clamp)
        self.skip = None
        if architecture == "resnet":
            self.skip = Conv2dLayer(tmp_channels, out_channels, 1, bias=False, down=True)
        self.downsample_image = architecture == "skip"  # the next block reads the image too
        # Self-attention on the block's input features (after fromRGB), before its convolutions (SAGAN)
        self.attn = SelfAttention(tmp_channels) if attention else None
        self.register_buffer("resample_filter", fir_kernel(), persistent=False)
        self.ops = REFERENCE_OPS  # the fused ops' implementation (set by nets.kernels.use_kernels)

    def forward(self, x, img, force_fp32: bool = False, rgb_gain: float = 1.0):
        """x: the previous block's features (None for the top block), img: the image at this block's resolution
        (None once no block reads it) -> (features, image for the next block). fromRGB's features are added to x
        times `rgb_gain` (a growing D's fade, Discriminator.forward)."""
        dtype = block_dtype(self.use_fp16, force_fp32, img.device if x is None else x.device)
        if self.fromrgb is not None and img is not None:
            y = self.fromrgb(img.to(dtype))
            y = y if rgb_gain == 1 else y * rgb_gain
            x = y if x is None else x.to(dtype) + y
            img = self.ops.downsample2d(img, self.resample_filter) if self.downsample_image else None
        else:
            x = x.to(dtype)
        if self.attn is not None:
            x = self.attn(x)
        if self.skip is None:
            return self.conv1(self.conv0(x)), img
        y = self.skip(x, gain=RESIDUAL_GAIN)
        x = self.conv1(self.conv0(x), gain=RESIDUAL_GAIN)
        return y + x, img


class MinibatchStdLayer(nn.Module):
    """Append the mean stddev over groups of samples as extra feature maps (Karras et al. 2018, Sec. 3).

    Sample i belongs to group i % (N / G), as upstream; N must be a multiple of the group size G = min(group, N).
    With `batches` > 1 the input is that many equal batches one after the other, each grouped on its own: the
    same values as one call per batch.
    """

    def __init__(self, group_size: int, num_channels: int = 1):
        super().__init__()
        self.group_size, self.num_channels = group_size, num_channels

    def forward(self, x: torch.Tensor, batches: int = 1) -> torch.Tensor:
        total, c, h, w = x.shape
        n = total // batches
        g = min(self.group_size, n)
        f = self.num_channels
        assert n * batches == total and n % g == 0, (
            f"minibatch stddev: batch {n} is not a multiple of the group size {g}"
        )
        y = x.reshape(batches, g, -1, f, c // f, h, w)  # [B, G, N/G, F, C/F, H, W]
        y = (y - y.mean(dim=1, keepdim=True)).square().mean(dim=1)  # variance over each group
        y = (y + 1e-8).sqrt().mean(dim=[3, 4, 5])  # [B, N/G, F]: mean stddev over channels and pixels
        y = y.reshape(batches, 1, -1, f, 1, 1).expand(-1, g, -1, -1, h, w).reshape(total, f, h, w)  # [B N, F, H, W]
        return torch.cat([x, y], dim=1)

    def extra_repr(self) -> str:
        return f"group_size={self.group_size}, num_channels={self.num_channels}"


class DiscriminatorEpilogue(nn.Module):
    """The 4x4 head (4 x rows by 4 x cols with aspect (rows, cols)): minibatch stddev, 3x3 conv, dense over every
    position, output (projection onto cmap when conditional)."""

    def __init__(self, in_channels, cmap_dim, mbstd_group_size, mbstd_num_channels, conv_clamp, img_channels=0,
                 aspect=(1, 1)):  # fmt: skip
        """img_channels > 0: a "skip" D's head, which adds fromRGB of the 4x4 image first."""
        super().__init__()
        self.cmap_dim = cmap_dim
        self.size = (4 * aspect[0], 4 * aspect[1])  # (H, W)
        self.fromrgb = Conv2dLayer(img_channels, in_channels, 1, "lrelu") if img_channels else None
        self.mbstd = MinibatchStdLayer(mbstd_group_size, mbstd_num_channels)
        self.conv = Conv2dLayer(in_channels + mbstd_num_channels, in_channels, 3, "lrelu", conv_clamp=conv_clamp)
        self.fc = FullyConnectedLayer(in_channels * math.prod(self.size), in_channels, "lrelu")
        self.out = FullyConnectedLayer(in_channels, cmap_dim if cmap_dim > 0 else 1)

    def forward(self, x: torch.Tensor, img, cmap: torch.Tensor | None, batches: int = 1) -> torch.Tensor:
        assert x.shape[2:] == self.size, f"D head: expected {list(self.size)} features, got {list(x.shape)}"
        x = x.to(torch.float32)
        if self.fromrgb is not None:
            x = x + self.fromrgb(img.to(torch.float32))
        x = self.conv(self.mbstd(x, batches))
        x = self.out(self.fc(x.flatten(1)))
        if cmap is not None:
            # projection discriminator (Miyato & Koyama 2018): <features, class embedding>, scaled by 1/sqrt(dim)
            x = (x * cmap).sum(dim=1, keepdim=True) / math.sqrt(self.cmap_dim)
        return x.to(torch.float32)


class Discriminator(nn.Module):
    """StyleGAN2 residual discriminator: image [N, C, R x rows, R x cols] and one-hot c [N, c_dim] -> logits [N, 1]
    (float32); square (rows = cols = 1) unless `aspect`.

    Args:
        resolution, img_channels, c_dim, channel_base, channel_max: as for the Generator.
        mbstd_group_size: samples per minibatch-stddev group (4 in config F, 32 in the ADA CIFAR config).
        num_fp16_res: run this many top resolutions in fp16 (CUDA only).
        conv_clamp: clamp conv outputs to +-conv_clamp, or None.
        architecture: "resnet" (config F), "orig" or "skip" (limits.ARCHITECTURES).
        attention: the block resolutions (8 and up) whose input features pass through self-attention.
        progressive: a fromRGB at every resolution, so that the network can grow (nets/growth.py); stage: its
            growth stage [resolution, fade] (None: fully grown), the resolution of the images it takes.
        aspect: (rows, cols) as for the Generator: images [resolution x rows, resolution x cols], every block at
            its resolution times (rows, cols) and the head's dense layer over 4 x rows by 4 x cols positions.
        The generator's z_dim, w_dim and mapping_layers are accepted and ignored, so one architecture dict can
        build both networks; any other keyword is a TypeError.

    forward(img, c, force_fp32, batches): `batches` > 1 judges that many equal batches stacked in one call (the
    minibatch stddev groups each on its own): the same logits as one call per batch, in one pass, which on CPU is
    faster than two (larger matrix products, the weights prepared once).
    """

    def __init__(self, resolution=32, img_channels=3, c_dim=0, channel_base=16384, channel_max=512,
                 mbstd_group_size=4, num_fp16_res=0, conv_clamp=None, architecture="resnet", attention=(),
                 progressive=False, stage=None, aspect=(1, 1), **ignored_generator_kwargs):  # fmt: skip
        super().__init__()
        unknown = sorted(set(ignored_generator_kwargs) - set(GENERATOR_ONLY_KWARGS))
        if unknown:  # accept G's arguments so one dict builds both nets, but never swallow a typo
            raise TypeError(f"Discriminator got unexpected keyword arguments {unknown}")
        self._config = dict(resolution=resolution, img_channels=img_channels, c_dim=c_dim, channel_base=channel_base,
                            channel_max=channel_max, mbstd_group_size=mbstd_group_size, num_fp16_res=num_fp16_res,
                            conv_clamp=conv_clamp, architecture=architecture)  # fmt: skip
        self._config |= {"attention": list(attention)} if attention else {}  # recorded where there is any
        self._config |= {"progressive": True} if progressive else {}
        check_arch(**self._config, stage=stage, aspect=aspect)
        self._config |= aspect_config(aspect)  # recorded where not square
        self.resolution, self.img_channels, self.c_dim = resolution, img_channels, c_dim
        self.architecture, self.aspect = architecture, tuple(aspect)
        self.image_size = (resolution * self.aspect[0], resolution * self.aspect[1])  # (H, W)
        self.block_resolutions = [2**i for i in range(int(math.log2(resolution)), 2, -1)]
        fp16_res = fp16_min_resolution(resolution, num_fp16_res)
        for res in self.block_resolutions:
            in_channels = channels_at(res, channel_base, channel_max) if res < resolution else 0
            tmp_channels = channels_at(res, channel_base, channel_max)
            out_channels = channels_at(res // 2, channel_base, channel_max)
            block = DiscriminatorBlock(in_channels, tmp_channels, out_channels, img_channels, res >= fp16_res,
                                       conv_clamp, architecture, res in attention, progressive)  # fmt: skip
            setattr(self, f"b{res}", block)
        cmap_dim = channels_at(4, channel_base, channel_max) if c_dim > 0 else 0
        self.mapping = None
        if c_dim > 0:
            self.mapping = MappingNetwork(0, c_dim, cmap_dim, CMAP_LAYERS, num_ws=None, w_avg_beta=None)
        self.b4 = DiscriminatorEpilogue(channels_at(4, channel_base, channel_max), cmap_dim, mbstd_group_size, 1,
                                        conv_clamp, img_channels if architecture == "skip" else 0,
                                        self.aspect)  # fmt: skip
        self.grad_checkpoint = False  # recompute each block's activations in backward (a speed/memory switch)
        self.channels_last_input = False  # CPU: see use_cpu_kernels
        self.set_stage(stage)

    @property
    def config(self) -> dict:
        """JSON-serialisable constructor kwargs: Discriminator(**D.config) rebuilds the same architecture."""
        return dict(self._config)

    def set_stage(self, stage) -> None:
        """Grow to `stage` ([resolution, fade]; None: fully grown), which `config` records from now on."""
        self._config, self.stage = staged(self._config, self.resolution, stage)

    def layers_from_input(self) -> list[str]:
        """The names of D's layers counted from the input as the official code counts them for freezing: each
        block from the top resolution down, its fromRGB, conv0, conv1 and skip (the last block, b4, is not counted)."""
        names = []
        for res in self.block_resolutions:
            block = getattr(self, f"b{res}")
            names += [f"b{res}.{layer}" for layer in ("fromrgb", "conv0", "conv1", "skip") if getattr(block, layer)]
        return names

    def frozen_parameters(self, layers: int) -> set[str]:
        """The parameter names of the first `layers` layers counted from the input (`layers_from_input`)."""
        frozen = tuple(f"{name}." for name in self.layers_from_input()[:layers])
        return {name for name, _ in self.named_parameters() if name.startswith(frozen)}

    def use_cpu_kernels(self, enabled: bool = True) -> None:
        """The CPU's fast paths, chosen once when the network is built for CPU: the same-size 3x3 convolutions large
        enough to gain by Winograd's algorithm run that way (nets/winograd.py), and the image is taken channels-last.
        The Winograd convolutions return channels-last, so fromRGB's output in that layout too keeps each block's skip
        path and residual sum in one layout; channels-last depthwise FIR filters were 2-10x faster and a mixed-layout
        sum is slow (D main about 9% faster at 32 and 64 px; CUDA has its own --channels-last)."""
        for res in self.block_resolutions:
            conv = getattr(self, f"b{res}").conv0
            conv.winograd = enabled and worth_it(conv.weight, res * res * math.prod(self.aspect))
        self.b4.conv.winograd = enabled and worth_it(self.b4.conv.weight, math.prod(self.b4.size))
        self.channels_last_input = enabled

    def forward(self, img: torch.Tensor, c: torch.Tensor, force_fp32: bool = False, batches: int = 1) -> torch.Tensor:
        """img [N, img_channels, top x rows, top x cols] for the stage's resolution `top` (the network's, unless
        growing) and the aspect (rows, cols); c [N, c_dim] -> logits [N, 1]."""
        top, fade = self.stage
        shape = (self.img_channels, top * self.aspect[0], top * self.aspect[1])
        assert img.ndim == 4 and img.shape[1:] == shape, f"img: expected [N, *{shape}], got {list(img.shape)}"
        x = None
        img = img.contiguous(memory_format=torch.channels_last) if self.channels_last_input else img
        entry = img
        for res in self.block_resolutions[self.block_resolutions.index(top) :]:
            block, rgb_gain = getattr(self, f"b{res}"), 1.0
            if res == top // 2 and fade < 1:  # the previous stage's entry fades out as the new block fades in (ProGAN
                # Fig. 2b); a skip D reads the image at every block, the others only where it enters
                x = x * fade
                img = block.ops.downsample2d(entry, block.resample_filter) if img is None else img
                rgb_gain = 1.0 if self.architecture == "skip" else 1.0 - fade
            x, img = run_block(block, x, img, force_fp32, rgb_gain, recompute=self.grad_checkpoint)
        cmap = self.mapping(None, c) if self.mapping is not None else None
        return self.b4(x, img, cmap, batches)
