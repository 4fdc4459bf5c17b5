"""The fused operations the networks call through one table, so that an implementation can be chosen per network
(`ganforge.nets.kernels.use_kernels`) without a branch in any layer: `REFERENCE_OPS` (plain PyTorch,
`ganforge.nets.layers` and `ganforge.nets.filtered_lrelu`) or `TRITON_OPS` (`ganforge.nets.triton_ops`). Every
implementation computes the same maths and is differentiable twice (R1 and the path-length penalty differentiate
gradients). The leaky ReLU's constants live here, below both, so that every implementation shares them."""

import math
from collections.abc import Callable
from dataclasses import dataclass

LRELU_SLOPE = 0.2
LRELU_GAIN = math.sqrt(2.0)  # keeps the activations' second moment after leaky ReLU (He et al. 2015)


@dataclass(frozen=True)
class FusedOps:
    """One implementation of each fused op; the signatures are those of the reference functions in nets/layers.py
    and nets/filtered_lrelu.py."""

    name: str
    bias_act: Callable  # (x, b, act, gain, clamp): + bias, activation, * gain, clamp to +-clamp
    fir_filter: Callable  # (x, f, pad, gain): pad every side, convolve with f * gain
    upsample2d: Callable  # (x, f): 2x FIR upsampling
    downsample2d: Callable  # (x, f): 2x FIR downsampling
    filtered_lrelu: Callable  # (x, fu, fd, b, up, down, padding, gain, slope, clamp): nets/filtered_lrelu.py
