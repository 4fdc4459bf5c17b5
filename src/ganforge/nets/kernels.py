"""Which implementation of the fused ops a network runs: the one place that chooses (`--kernels`, resolved by
`ganforge.devices.pick_kernels`). Layers call their ops through their `ops` attribute (a `FusedOps`), which is the
reference unless `use_kernels` set another; the Triton module is imported only when asked for, so a machine without
Triton never loads it.

Covered by the Triton kernels: bias + activation + gain + clamp (StyleGAN2 G's convolutions and toRGB, the mapping
networks' layers), FIR up/down-sampling (G's upsampling convolutions and image skips, D's downsampling blocks and
image path), and StyleGAN3's filtered leaky ReLU (every synthesis layer, toRGB included). Everything else runs the
reference ops under either choice: R3GAN's resamplers, and D's activations, which its convolutions already fold
the bias and gain into."""

from torch import nn

from ganforge.nets.layers import REFERENCE_OPS
from ganforge.nets.ops import FusedOps


def kernel_ops(name: str) -> FusedOps:
    """The FusedOps of a resolved `--kernels` choice ("reference" or "triton")."""
    if name == "reference":
        return REFERENCE_OPS
    assert name == "triton", name
    from ganforge.nets.triton_ops import TRITON_OPS

    return TRITON_OPS


def use_kernels(ops: FusedOps, *networks: nn.Module) -> None:
    """Make every layer of `networks` that calls fused ops call `ops` (a copy of a network keeps its choice)."""
    for network in networks:
        for module in network.modules():
            if isinstance(getattr(module, "ops", None), FusedOps):
                module.ops = ops
