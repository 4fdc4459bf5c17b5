"""The fused operations the networks call through one table, so that an implementation can be chosen per network
(`ganforge.nets.kernels.use_kernels`) without a branch in any layer: `REFERENCE_OPS` (plain PyTorch,
`ganforge.nets.layers`) or `TRITON_OPS` (`ganforge.nets.triton_ops`). Every implementation computes the same maths
and is differentiable twice (R1 and the path-length penalty differentiate gradients)."""

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class FusedOps:
    """One implementation of each fused op; the signatures are those of the reference functions in nets/layers.py."""

    name: str
    bias_act: Callable  # (x, b, act, gain, clamp): + bias, activation, * gain, clamp to +-clamp
    fir_filter: Callable  # (x, f, pad, gain): pad every side, convolve with f * gain
    upsample2d: Callable  # (x, f): 2x FIR upsampling
    downsample2d: Callable  # (x, f): 2x FIR downsampling
