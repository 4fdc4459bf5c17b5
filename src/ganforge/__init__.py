"""ganforge: StyleGAN2-family training that resumes exactly, never runs a checkpoint, and is tested."""

import importlib
from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("ganforge")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"


def __getattr__(name: str):
    """`ganforge.load`, the Python API (ganforge/api.py), imported on first use: `import ganforge` stays light."""
    if name == "load":
        from ganforge.api import load

        return load
    raise AttributeError(f"module 'ganforge' has no attribute {name!r}")


def names_on_first_use(package: str, homes: dict[str, str]):
    """A `__getattr__` for `package` that imports each of its names from its module in `homes` (name -> module) when it
    is first used: importing the package, as `ganforge --help` does for a command's options, stays free of torch."""

    def attribute(name: str):
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(homes[name]), name)

    return attribute
