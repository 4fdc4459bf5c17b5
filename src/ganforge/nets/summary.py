"""A per-layer table of a network's forward pass: module name, output shape, own parameter count."""

import torch
from torch import nn


def _shapes(output) -> str:
    """Shapes of every tensor in a (possibly nested tuple/list) module output, e.g. "[4, 512, 8, 8]"."""
    if isinstance(output, torch.Tensor):
        return str(list(output.shape))
    if isinstance(output, (tuple, list)):
        return ", ".join(s for s in (_shapes(o) for o in output) if s)
    return ""


def summary(module: nn.Module, *inputs, **kwargs) -> str:
    """Run `module(*inputs, **kwargs)` without gradients and return a table of the modules it called, in order.

    Each row gives a submodule's name, its output shape(s) and the parameters it owns directly (not its
    children's); the footer gives the totals, so the table accounts for every parameter and buffer once.
    """
    names = {m: name for name, m in module.named_modules() if name}
    rows = []

    def hook(mod, _inputs, output):
        own = sum(p.numel() for p in mod.parameters(recurse=False))
        if own or not list(mod.children()):
            rows.append((names[mod], _shapes(output), own))

    handles = [m.register_forward_hook(hook) for m in names]
    try:
        with torch.no_grad():
            module(*inputs, **kwargs)
    finally:
        for h in handles:
            h.remove()
    params = sum(p.numel() for p in module.parameters())
    buffers = sum(b.numel() for b in module.buffers())
    rows.append(("Total", "", params))
    width = [max(len(r[i]) if i < 2 else len(f"{r[2]:,}") for r in rows + [("Module", "Output", 0)]) for i in range(3)]
    lines = [f"{'Module':<{width[0]}}  {'Output':<{width[1]}}  {'Params':>{width[2]}}"]
    lines += [f"{a:<{width[0]}}  {b:<{width[1]}}  {c:>{width[2]},}" for a, b, c in rows]
    lines.insert(-1, "-" * len(lines[0]))
    lines.append(f"{type(module).__name__}: {params:,} parameters, {buffers:,} buffer elements")
    return "\n".join(lines)
