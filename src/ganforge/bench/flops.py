"""Counting the floating-point operations of a piece of work, with torch's FLOP formulas.

`torch.utils.flop_counter.FlopCounterMode` would do, but its module tracker breaks `torch.autograd.grad` with
respect to a leaf input (pytorch/pytorch#131753), which is exactly what the R1 penalty takes. This mode applies the
same per-operator formulas (`flop_registry`: matmuls, convolutions and their backward passes) without module
tracking.
"""

from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import flop_registry


class FlopCount(TorchDispatchMode):
    """Total FLOPs of the operators run while active, forward and backward alike (a context manager)."""

    def __init__(self):
        super().__init__()
        self.total = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        formula = flop_registry.get(func._overloadpacket)
        if formula is not None:
            self.total += formula(*args, **kwargs, out_val=out)
        return out


def count_flops(fn) -> int:
    """FLOPs of one call of `fn()`."""
    with FlopCount() as counter:
        fn()
    return counter.total
