"""ganforge: StyleGAN2-family training that resumes exactly, never runs a checkpoint, and is tested."""

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
