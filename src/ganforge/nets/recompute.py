"""Gradient checkpointing of network blocks (Chen et al. 2016, "Training Deep Nets with Sublinear Memory Cost"):
a block's activations are not kept for backward but recomputed from its inputs when backward reaches it, trading
one extra forward of the block for the memory of its activations.

The non-reentrant implementation is used because it also serves double backward (R1 and path length differentiate
gradients again) and `torch.autograd.grad`. With `preserve_rng_state` the recomputation replays the global RNG
(CPU, and CUDA for the inputs' device) from where the block's forward started, so the per-layer noise of the
synthesis is drawn again bit for bit; the RNG state after backward is what it would have been without recomputation.
A block recomputed must have no other side effect (no running statistics updated in its forward).
"""

import torch
from torch.utils.checkpoint import checkpoint


def run_block(block: torch.nn.Module, *args, recompute: bool):
    """block(*args), its activations recomputed in backward when `recompute` and autograd is recording."""
    if recompute and torch.is_grad_enabled():
        return checkpoint(block, *args, use_reentrant=False, preserve_rng_state=True)
    return block(*args)
