"""The layers of R3GAN's networks (Huang et al. 2024, "The GAN is dead; long live the GAN! A Modern GAN Baseline",
Sec. 3 and Fig. 3): plain convolutions without equalized learning rate, biases only before the activations, residual
bottleneck blocks with a grouped middle convolution and no normalisation, and 2x FIR resampling between stages.

Initialisation (Sec. 3.4, "fix-up" style): every weight is N(0, gain^2 / fan_in); a block's last convolution starts at
zero, so each residual branch starts as the identity, and the other two are scaled by L^(-1/(2m-2)) with L the
network's number of blocks and m = 3 the convolutions per block (Zhang et al. 2019, "Fixup initialization", Sec. 3),
which keeps the output variance bounded however deep the network is.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

from ganforge.nets.layers import LRELU_SLOPE, downsample2d, fir_kernel, upsample2d

LINEAR_LAYERS_PER_BLOCK = 3
# Leaky ReLU's variance gain: E[lrelu(x)^2] = (1 + slope^2) / 2 for x ~ N(0, 1), so sqrt(2 / (1 + slope^2)) restores it
ACTIVATION_GAIN = math.sqrt(2 / (1 + LRELU_SLOPE**2))


def msr_weight(shape: tuple[int, ...], gain: float) -> nn.Parameter:
    """A weight [out, in/groups, *kernel] (or [out, in]) drawn N(0, gain^2 / fan_in), fan_in = in/groups x kernel
    area (He et al. 2015, "Delving deep into rectifiers", Eq. 10, with the gain of the activation that follows)."""
    fan_in = math.prod(shape[1:])
    return nn.Parameter(torch.randn(shape) * (gain / math.sqrt(fan_in)))


class Convolution(nn.Module):
    """A stride-1 'same' convolution without bias; the weight is cast to the input's dtype at use (fp32 master)."""

    def __init__(self, in_channels: int, out_channels: int, kernel: int, groups: int = 1, gain: float = 1.0):
        super().__init__()
        self.groups = groups
        self.weight = msr_weight((out_channels, in_channels // groups, kernel, kernel), gain)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.conv2d(x, self.weight.to(x.dtype), padding=self.weight.shape[-1] // 2, groups=self.groups)


class BiasedActivation(nn.Module):
    """Leaky ReLU(x + b), slope 0.2; the bias starts at zero."""

    def __init__(self, channels: int):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.leaky_relu(x + self.bias.to(x.dtype).view(1, -1, 1, 1), LRELU_SLOPE)


class ResidualBlock(nn.Module):
    """x + conv3(act(conv2(act(conv1(x))))): 1x1 expanding by `expansion`, k x k grouped in `cardinality` groups,
    1x1 back (the ResNeXt bottleneck, Xie et al. 2017, inverted as in Sec. 3.2 of the paper). `network_blocks` is L,
    the number of blocks in the whole network, for the fix-up scaling."""

    def __init__(self, channels: int, cardinality: int, expansion: int, kernel: int, network_blocks: int):
        super().__init__()
        expanded = channels * expansion
        gain = ACTIVATION_GAIN * network_blocks ** (-1 / (2 * LINEAR_LAYERS_PER_BLOCK - 2))
        self.conv1 = Convolution(channels, expanded, 1, gain=gain)
        self.act1 = BiasedActivation(expanded)
        self.conv2 = Convolution(expanded, expanded, kernel, groups=cardinality, gain=gain)
        self.act2 = BiasedActivation(expanded)
        self.conv3 = Convolution(expanded, channels, 1, gain=0.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv3(self.act2(self.conv2(self.act1(self.conv1(x)))))


class Upsample(nn.Module):
    """G's transition between stages: a 1x1 convolution where the width changes (at the lower resolution, where it
    is cheaper), then 2x upsampling with the [1, 3, 3, 1] FIR filter (Sec. 3.2: "bilinear" resampling)."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv = Convolution(in_channels, out_channels, 1) if in_channels != out_channels else None
        self.register_buffer("filter", fir_kernel(), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x if self.conv is None else self.conv(x)
        return upsample2d(x, self.filter)


class Downsample(nn.Module):
    """D's transition: 2x FIR downsampling, then a 1x1 convolution where the width changes (at the lower resolution)."""

    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.register_buffer("filter", fir_kernel(), persistent=False)
        self.conv = Convolution(in_channels, out_channels, 1) if in_channels != out_channels else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = downsample2d(x, self.filter)
        return x if self.conv is None else self.conv(x)


class GenerativeBasis(nn.Module):
    """G's first layer: a learned 4x4 basis per channel, scaled per sample by a linear map of the input vector."""

    def __init__(self, in_features: int, channels: int):
        super().__init__()
        self.basis = nn.Parameter(torch.randn(channels, 4, 4))
        self.linear = msr_weight((channels, in_features), 1.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = F.linear(x, self.linear.to(x.dtype))  # [N, C]
        return self.basis.to(x.dtype)[None] * scale[:, :, None, None]  # [N, C, 4, 4]


class DiscriminativeBasis(nn.Module):
    """D's last layer: a depthwise 4x4 'valid' convolution (a learned per-channel pooling of the 4x4 map), then a
    linear map to the output features."""

    def __init__(self, channels: int, out_features: int):
        super().__init__()
        self.depthwise = msr_weight((channels, 1, 4, 4), 1.0)
        self.linear = msr_weight((out_features, channels), 1.0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pooled = F.conv2d(x, self.depthwise.to(x.dtype), groups=x.shape[1]).flatten(1)  # [N, C]
        return F.linear(pooled, self.linear.to(x.dtype))
