"""`ganforge train` as importable functions:

    from ganforge.train import TrainOptions, resolve, run
    config = resolve(TrainOptions(data="digits.zip", outdir="runs", preset="tiny", kimg=50))
    status = run(config)

The names are loaded on first use: `ganforge --help` imports `ganforge.train.options` (and so this file), and must
not pay for importing torch.
"""

import importlib

_HOMES = {
    "TrainOptions": "ganforge.train.options",
    "resolve": "ganforge.train.resolver",
    "run": "ganforge.train.command",
    "main": "ganforge.train.command",
}

__all__ = list(_HOMES)


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'ganforge.train' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
