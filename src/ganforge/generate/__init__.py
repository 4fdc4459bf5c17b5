"""`ganforge generate` as an importable function:

    from ganforge.generate import GenerateOptions, generate
    generate(GenerateOptions(network=Path("ffhq.pkl"), outdir=Path("out"), seeds=(0, 1, 2), trunc=0.7))

The network may be a ganforge snapshot, an NVlabs pickle or a rosinality checkpoint (see ganforge.interop). Importing
this package is cheap; torch is imported when `generate` runs.
"""

from ganforge.generate.options import GenerateOptions


def generate(options: GenerateOptions) -> dict:
    """Make what `options` asks for; returns {"written": [file names], "images", "images_per_second", "device"}."""
    from ganforge.generate.run import generate as run

    return run(options)


__all__ = ["GenerateOptions", "generate"]
