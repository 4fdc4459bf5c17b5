"""NVlabs StyleGAN3 (alias-free) generators, read as data by `official_pickle`, -> ganforge StyleGAN3Generator.

The constructor kwargs of `training/networks_stylegan3.py`'s Generator become ganforge's architecture: config R is
the one with 1x1 convolutions and radially symmetric filters, whose channel base and maximum the official training
script doubles before recording them (ganforge doubles them inside, so they are halved here). Settings ganforge
implements only in the published form (critical layers, cutoffs, margin, filter size, output scale) must have that
value. Tensor names are the official ones, filters and `magnitude_ema` included, so the state loads as recorded.
"""

import math
from pathlib import Path

from ganforge.errors import UserError
from ganforge.interop.official import ANY, IGNORE, child, module_tensors, required_kwargs, settings
from ganforge.interop.official_pickle import PersistentRecord
from ganforge.interop.tensors import build_network
from ganforge.limits import shown
from ganforge.nets import StyleGAN3Generator
from ganforge.snapshot import listed

G_REQUIRED = ("z_dim", "c_dim", "w_dim", "img_resolution", "img_channels")
MAPPING_RULES = {"num_layers": (2, ANY), "lr_multiplier": (0.01, [0.01]), "w_avg_beta": IGNORE}
# Defaults of the official SynthesisNetwork and SynthesisLayer (Karras et al. 2021, App. F and its released code).
SYNTHESIS_RULES = {
    "channel_base": (32768, ANY),
    "channel_max": (512, ANY),
    "num_fp16_res": (4, ANY),
    "conv_clamp": (256, ANY),
    "num_layers": (14, ANY),
    "num_critical": (2, [2]),
    "first_cutoff": (2, [2]),
    "first_stopband": (2**2.1, ANY),
    "last_stopband_rel": (2**0.3, ANY),
    "margin_size": (10, [10]),
    "output_scale": (0.25, [0.25]),
    "conv_kernel": (3, [3, 1]),
    "use_radial_filters": (False, [False, True]),
    "filter_size": (6, [6]),
    "lrelu_upsampling": (2, [2]),
    "use_fp16": IGNORE,
    "magnitude_ema_beta": IGNORE,
}
FLOAT_SETTINGS = ("first_stopband", "last_stopband_rel")  # exact powers of two in float, compared within rounding


def is_stylegan3(record: PersistentRecord) -> bool:
    """Does this official Generator have an alias-free synthesis network (an `input` layer, no `b4` block)?"""
    synthesis = child(record, "synthesis")
    return isinstance(synthesis, PersistentRecord) and child(synthesis, "input") is not None


def stylegan3_arch(path: Path, kwargs: dict) -> dict:
    """ganforge StyleGAN3Generator kwargs from an official Generator's; UserError listing every unsupported one."""
    problems = []
    top = required_kwargs(path, kwargs, G_REQUIRED, problems)
    mapping = settings(f"{path}: mapping_kwargs.", kwargs.pop("mapping_kwargs", {}), MAPPING_RULES, problems)
    synthesis = settings(f"{path}: ", kwargs, SYNTHESIS_RULES, problems)
    for name in FLOAT_SETTINGS:
        value = synthesis[name]
        if type(value) not in (int, float) or not math.isclose(value, SYNTHESIS_RULES[name][0], rel_tol=1e-9):
            problems.append(f"{path}: {name}={shown(value)}: ganforge implements only {SYNTHESIS_RULES[name][0]!r}")
    radial, kernel = synthesis["use_radial_filters"], synthesis["conv_kernel"]
    if (kernel == 1) != radial:
        problems.append(
            f"{path}: conv_kernel={kernel} with use_radial_filters={radial}: ganforge implements config T "
            "(3, False) and config R (1, True)"
        )
    if problems:
        raise UserError(*listed("", problems, f"{path}: "))
    widen = 2 if radial else 1  # the official script recorded config R's doubled widths
    return dict(
        resolution=top["img_resolution"],
        img_channels=top["img_channels"],
        c_dim=top["c_dim"],
        z_dim=top["z_dim"],
        w_dim=top["w_dim"],
        channel_base=_narrowed(synthesis["channel_base"], widen),
        channel_max=_narrowed(synthesis["channel_max"], widen),
        mapping_layers=mapping["num_layers"],
        num_fp16_res=synthesis["num_fp16_res"],
        conv_clamp=synthesis["conv_clamp"],
        config="r" if radial else "t",
        num_layers=synthesis["num_layers"],
    )


def _narrowed(width, widen: int):
    """A recorded width divided by the factor config R widened it by; a value that is not an integer is kept for the
    architecture check to report."""
    return width // widen if type(width) is int else width


def read_stylegan3(path: Path, record: PersistentRecord, kwargs: dict) -> tuple[StyleGAN3Generator, dict]:
    """A ganforge StyleGAN3Generator equal to the official one, and the architecture it was built from."""
    arch = stylegan3_arch(path, kwargs)
    return build_network(path, StyleGAN3Generator, arch, module_tensors(path, record)), arch
