"""The `ganforge generate` command line that writes the image a request returns, byte for byte: the options a request
was parsed into, written back as generate's flags (only those that differ from generate's defaults)."""

import shlex

from ganforge.generate.options import GenerateOptions

OUTDIR = "out"


def _ranges(values: tuple[int, ...]) -> str:
    """(0, 1, 2, 3, 9) -> "0-3,9": consecutive runs as ranges, as --seeds takes them."""
    parts, start = [], 0
    for k in range(1, len(values) + 1):
        if k == len(values) or values[k] != values[k - 1] + 1:
            first, last = values[start], values[k - 1]
            parts.append(str(first) if first == last else f"{first}-{last}")
            start = k
    return ",".join(parts)


def _mode_flags(o: GenerateOptions) -> list[str]:
    if o.mode == "style_mix":
        rows, cols = o.style_mix
        flags = ["--style-mix", _ranges(rows), _ranges(cols), "--mix-cells"]
        return flags + (["--mix-layers", _ranges(o.mix_layers)] if o.mix_layers else [])
    flags = ["--seeds", _ranges(o.seeds)]
    if o.grid:
        flags += ["--grid", f"{o.grid[0]}x{o.grid[1]}"]
    if o.interp:
        flags += ["--interp", str(o.interp), "--interp-format", o.interp_format]
    return flags


def _latent_flags(o: GenerateOptions) -> list[str]:
    flags = []
    if o.trunc != 1.0:
        flags += ["--trunc", repr(o.trunc)]
    if o.trunc_cutoff is not None:
        flags += ["--trunc-cutoff", str(o.trunc_cutoff)]
    if o.class_index is not None:
        flags += ["--class", str(o.class_index)]
    if o.label is not None:
        flags += ["--label", ",".join(repr(v) for v in o.label)]
    if o.noise_mode != "const":
        flags += ["--noise-mode", o.noise_mode]
    if o.translate != (0.0, 0.0):
        flags += ["--translate", f"{o.translate[0]!r},{o.translate[1]!r}"]
    if o.rotate != 0.0:
        flags += ["--rotate", repr(o.rotate)]
    return flags


def generate_command(o: GenerateOptions) -> str:
    """The shell command that writes the file; its --device is where the image was made, since another device's
    kernels may round a pixel differently."""
    words = ["ganforge", "generate", "--network", str(o.network), "--outdir", OUTDIR, "--device", o.device]
    return shlex.join(words + _mode_flags(o) + _latent_flags(o))
