"""Self-attention over the positions of a feature map (Zhang et al. 2019, "Self-Attention Generative Adversarial
Networks", SAGAN, Sec. 3), for StyleGAN2's G and D at chosen resolutions.

Each position i of x [N, C, H, W] attends to every position j: query q_i = W_q x_i, key k_j = W_k x_j and value
v_j = W_v x_j are 1x1 projections to C/8 channels (SAGAN's C-bar; the key without a bias, which would add the same
q_i . b to every logit of a row and so change nothing), o_i = W_o sum_j softmax_j(q_i . k_j / sqrt(C/8)) v_j projects
back to C, and the block returns x + gamma o with gamma a learned scalar that starts at 0 (SAGAN Eq. 3),
so that a network with attention computes at initialisation exactly what it computes without.

Two departures from SAGAN, both for StyleGAN2's training: the projections have equalized learning rate (weights
drawn N(0, 1), scaled by 1/sqrt(fan-in) when used, as every other StyleGAN2 layer, so that Adam's step means the same
in them), and the logits are divided by sqrt(C/8) (Vaswani et al. 2017, Sec. 3.2.1): with unit-variance projections
a dot product over C/8 channels has variance C/8, which would saturate the softmax from the first step.

The attention itself is `torch.nn.functional.scaled_dot_product_attention`, whose fused kernels (flash and
memory-efficient attention on CUDA, flash on CPU) never hold the [HW, HW] map; their backward has no derivative of its
own, so the passes that a penalty differentiates twice (R1, path length) run under `twice_differentiable()`, which
selects the kernel that computes the map explicitly (its memory is checked before training: train/problems.py).
"""

import contextlib

import torch
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from ganforge.nets.layers import Conv2dLayer

REDUCTION = 8  # queries, keys and values have channels / 8 channels (SAGAN Sec. 3: "C-bar = C/8")
# Tensors of one [positions, positions] map that a twice-differentiated pass holds at once: the logits, their
# softmax and, in the second backward, the gradient of each
MAPS_HELD_TWICE_DIFFERENTIATED = 4


class SelfAttention(nn.Module):
    """x [N, C, H, W] -> x + gain * attention(x), the same shape and dtype; `gain` starts at 0."""

    def __init__(self, channels: int):
        super().__init__()
        inner = max(channels // REDUCTION, 1)
        self.query = Conv2dLayer(channels, inner, 1)
        self.key = Conv2dLayer(channels, inner, 1, bias=False)  # q . (k + b) adds q . b to a whole row: no effect
        self.value = Conv2dLayer(channels, inner, 1)
        self.out = Conv2dLayer(inner, channels, 1)
        self.gain = nn.Parameter(torch.zeros([]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, _, h, w = x.shape
        # [N, 1, HW, C/8]: one head (the 4-D layout that every kernel and the ONNX exporter take)
        q, k, v = (p(x).flatten(2).transpose(1, 2).unsqueeze(1) for p in (self.query, self.key, self.value))
        o = nn.functional.scaled_dot_product_attention(q, k, v)  # softmax over the keys' positions
        o = o[:, 0].transpose(1, 2).reshape(n, -1, h, w)
        return x + self.gain.to(x.dtype) * self.out(o)


def twice_differentiable() -> contextlib.AbstractContextManager:
    """The attention of the passes inside computed by the kernel that has a second derivative (the explicit map)."""
    return sdpa_kernel([SDPBackend.MATH])


def attention_map_bytes(resolution: int, batch: int) -> int:
    """Bytes of the float32 [positions, positions] maps that a twice-differentiated pass holds for one attention
    block at `resolution` over `batch` images."""
    positions = resolution * resolution
    return MAPS_HELD_TWICE_DIFFERENTIATED * batch * positions * positions * 4
