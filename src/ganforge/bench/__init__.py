"""`ganforge bench`: how fast the real training step runs on this machine, with how much memory, at what share of
the device's peak FLOP/s, and with which `--batch-gpu`, on synthetic data (no dataset needed; `data=PATH` shapes it
like a dataset's images).

    from ganforge.bench import BenchOptions, run
    result = run(BenchOptions(preset="paper256", precision="bf16", auto_batch=True))  # dict, schema in docs/bench.md

Under `torchrun` every rank measures alone, then all together, which gives the scaling efficiency. The names are
loaded on first use: `ganforge --help` imports `ganforge.bench.options` (and so this file), and must not pay for
importing torch.
"""

import importlib

_HOMES = {"BenchOptions": "ganforge.bench.options", "run": "ganforge.bench.command", "table": "ganforge.bench.render"}

__all__ = list(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'ganforge.bench' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
