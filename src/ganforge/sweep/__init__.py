"""`ganforge sweep` as importable functions:

    from ganforge.sweep import SweepOptions, sweep
    status = sweep(SweepOptions(data="digits.zip", outdir="sweeps/digits", preset="tiny", kimg=200, trials=20))

The names are loaded on first use: `ganforge --help` imports `ganforge.sweep.options` (and so this file), and must
not pay for importing Optuna or torch.
"""

import importlib

_HOMES = {
    "SweepOptions": "ganforge.sweep.options",
    "sweep": "ganforge.sweep.study",
    "write_sweep_report": "ganforge.sweep.page",
}

__all__ = list(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'ganforge.sweep' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
