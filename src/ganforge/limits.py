"""Limits that several commands check, stated once: a dataset `dataset build` accepts is one `train` can use, and a
network file (snapshot, NVlabs pickle, rosinality checkpoint) describes a network within the same bounds.

A network file is untrusted: its architecture (constructor arguments) is checked here, by type and range and before
anything is built, so that a file of a few kilobytes cannot ask for 10^7 mapping layers or 10^5 channels. The bounds
are generous multiples of the largest published StyleGAN2/3 networks (config F: 512 channels, 8 mapping layers,
z = w = 512; StyleGAN3-R: 1024 channels, recorded by ganforge as 512 and doubled inside), so no real network is
refused, yet the largest network they allow is built in seconds and in a few GB.
"""

import math

# The networks' block structure halves from the image side down to 4x4, with at least one block above it (and the
# official networks stop at 1024).
MIN_RESOLUTION, MAX_RESOLUTION = 8, 1024
MAX_CHANNELS = 1024  # channel_max: twice config F's 512
MAX_CHANNEL_BASE = MAX_CHANNELS * MAX_RESOLUTION  # channels at r are min(base // r, max): a larger base changes nothing
MAX_LATENT_DIM = 2048  # z_dim, w_dim: four times the paper's 512
MAX_MAPPING_LAYERS = 32  # four times config F's 8
MAX_CLASSES = 65536  # c_dim, the label embedding's input size (ImageNet has 1000 classes)
MAX_IMG_CHANNELS = 4  # grayscale, RGB, RGBA
MAX_FP16_RES = 64  # more fp16 resolutions than the network has change nothing
MAX_MBSTD_GROUP = 1024  # minibatch-stddev group (4 to 32 in the official configs)
MAX_SYNTHESIS_LAYERS = 64  # StyleGAN3 synthesis layers (14 in the paper)
MIN_PARAMETER_BYTES = 2  # a file stores a parameter in 2 bytes at the least (half precision)

# name -> (smallest, largest) for the integer arguments of ganforge's network constructors
INTEGER_LIMITS = {
    "resolution": (MIN_RESOLUTION, MAX_RESOLUTION),
    "img_channels": (1, MAX_IMG_CHANNELS),
    "c_dim": (0, MAX_CLASSES),
    "z_dim": (1, MAX_LATENT_DIM),
    "w_dim": (1, MAX_LATENT_DIM),
    "channel_base": (1, MAX_CHANNEL_BASE),
    "channel_max": (1, MAX_CHANNELS),
    "mapping_layers": (1, MAX_MAPPING_LAYERS),
    "num_fp16_res": (0, MAX_FP16_RES),
    "mbstd_group_size": (1, MAX_MBSTD_GROUP),
    "num_layers": (3, MAX_SYNTHESIS_LAYERS),
}
# R3GAN (Huang et al. 2024): per-stage widths up to 4096 (2.7x the released ImageNet configurations' 1536), 16 blocks
# per stage (8x the released 2), expansion 8 (4x), kernels up to 7x7; D's class embedding as wide as a stage at most.
MAX_R3GAN_WIDTH, MAX_R3GAN_BLOCKS, MAX_R3GAN_EXPANSION, MAX_R3GAN_KERNEL = 4096, 16, 8, 7
INTEGER_LIMITS |= {
    "expansion": (1, MAX_R3GAN_EXPANSION),
    "kernel": (1, MAX_R3GAN_KERNEL),
    "embed_dim": (0, MAX_R3GAN_WIDTH),
}
# name -> (smallest, largest) for each item of the list arguments, which hold one value per resolution 4, 8, ...
LIST_LIMITS = {"widths": (1, MAX_R3GAN_WIDTH), "cardinalities": (1, MAX_R3GAN_WIDTH), "blocks": (1, MAX_R3GAN_BLOCKS)}
MAX_STAGES = MAX_RESOLUTION.bit_length() - 2  # 4x4 to 1024x1024
# StyleGAN2's architectures (Sec. 4.1, Fig. 7; the official `architecture` argument): "orig" (a plain stack, G's image
# from the last block only, D's from the top block only), "skip" (every G block adds its upsampled RGB image, every
# D block reads the downsampled image) and "resnet" (a residual 1x1 path around each block's two convolutions).
ARCHITECTURES = ("orig", "skip", "resnet")
CHOICES = {"config": ("t", "r"), "architecture": ARCHITECTURES}  # StyleGAN3's configurations, StyleGAN2's layouts
OPTIONAL_POSITIVE = ("conv_clamp",)  # None (no clamping) or a finite number > 0
# Lists of block resolutions, each a power of two from 8 to the network's: where StyleGAN2's G and D attend (SAGAN)
RESOLUTION_LISTS = ("attention",)
# A growing network (nets/growth.py): an image layer at every resolution, and the stage it has grown to
GROWTH_ARGUMENTS = ("progressive", "stage")
ARCHITECTURE_ARGUMENTS = (*INTEGER_LIMITS, *LIST_LIMITS, *CHOICES, *OPTIONAL_POSITIVE, *RESOLUTION_LISTS,
                          *GROWTH_ARGUMENTS, "aspect")  # fmt: skip
MAX_SHOWN_CHARS = 60  # what a message shows of a value read from a file
MAX_SHOWN_ITEMS = 8


def channels_at(res: int, channel_base: int, channel_max: int) -> int:
    """Feature maps at resolution `res`: min(channel_base // res, channel_max), as in the official configs (R3GAN's
    stage widths too)."""
    return min(channel_base // res, channel_max)


def stage_resolutions(resolution: int) -> list[int]:
    """4, 8, ..., resolution: one R3GAN stage each."""
    return [2**i for i in range(2, int(math.log2(resolution)) + 1)]


def resolution_ok(resolution) -> bool:
    """A power of two from MIN_RESOLUTION to MAX_RESOLUTION."""
    return (
        isinstance(resolution, int)
        and MIN_RESOLUTION <= resolution <= MAX_RESOLUTION
        and resolution & (resolution - 1) == 0
    )


RESOLUTIONS = f"a power of two from {MIN_RESOLUTION} to {MAX_RESOLUTION}"
IMAGE_SIZES = f"WxH with each side {RESOLUTIONS}"


def image_size_ok(width, height) -> bool:
    """A W x H image StyleGAN2 trains on: each side a power of two in the resolution range (square or not)."""
    return resolution_ok(width) and resolution_ok(height)


def aspect_of(width: int, height: int) -> tuple[int, tuple[int, int]]:
    """(the short side, (rows, cols)): the networks' resolution and the factors of the long side, e.g. 512x256 ->
    (256, (1, 2)). Both sides are powers of two, so the factors are too."""
    side = min(width, height)
    return side, (height // side, width // side)


BLOCK_RESOLUTIONS = f"must be a list of distinct powers of two from {MIN_RESOLUTION} to the network's resolution"


def block_resolutions_ok(value, resolution) -> bool:
    """A list of distinct resolutions of a network's blocks from 8 up (each a power of two, at most `resolution`)."""
    top = resolution if resolution_ok(resolution) else MAX_RESOLUTION
    return (
        type(value) is list
        and len(value) <= MAX_STAGES
        and all(type(r) is int and resolution_ok(r) and r <= top for r in value)
        and len(set(value)) == len(value)
    )


def stage_problem(stage, resolution, progressive) -> str | None:
    """The problem with a network argument `stage` ([resolution, fade] of a growing network, nets/growth.py; None:
    fully grown), or None. Types and ranges only, so that a file's value is checked before anything is built."""
    if stage is None:
        return None
    if not progressive:
        return f"stage={shown(stage)}: needs a progressive network (progressive=True)"
    ok = (
        isinstance(stage, (list, tuple))
        and len(stage) == 2
        and type(stage[0]) is int
        and resolution_ok(stage[0])
        and stage[0] <= (resolution if resolution_ok(resolution) else MAX_RESOLUTION)
        and type(stage[1]) in (int, float)
        and math.isfinite(stage[1])
        and 0 <= stage[1] <= 1
        and (stage[1] == 1 or stage[0] >= 2 * MIN_RESOLUTION)  # a fade comes from the resolution below
    )
    return None if ok else (f"stage={shown(stage)}: must be [resolution, fade], {RESOLUTIONS} up to the "
                            "network's, and a fade in [0, 1] (1 at the lowest)")  # fmt: skip


def architecture_problems(arch: dict) -> list[str]:
    """Every argument of a network architecture (the constructor kwargs a file records) that is not a value of the
    right type within its limits, one message each; [] when all are. Names outside ARCHITECTURE_ARGUMENTS are
    problems too. Only types and arithmetic: nothing is built, and a message never shows more than a short prefix of
    a value."""
    problems = []
    for name, value in arch.items():
        if name in INTEGER_LIMITS:
            low, high = INTEGER_LIMITS[name]
            if type(value) is not int or not low <= value <= high:  # bool is an int subclass, and never a size
                problems.append(f"{name}={shown(value)}: must be an integer from {low} to {high}")
        elif name in LIST_LIMITS:
            low, high = LIST_LIMITS[name]
            if not (
                type(value) is list
                and 1 <= len(value) <= MAX_STAGES
                and all(type(item) is int and low <= item <= high for item in value)
            ):
                problems.append(f"{name}={shown(value)}: must be 1 to {MAX_STAGES} integers from {low} to {high}")
        elif name in CHOICES:
            if not isinstance(value, str) or value not in CHOICES[name]:
                problems.append(f"{name}={shown(value)}: must be one of {', '.join(CHOICES[name])}")
        elif name in RESOLUTION_LISTS:
            if not block_resolutions_ok(value, arch.get("resolution")):
                problems.append(f"{name}={shown(value)}: {BLOCK_RESOLUTIONS}")
        elif name == "progressive":
            if type(value) is not bool:
                problems.append(f"progressive={shown(value)}: must be true or false")
        elif name == "stage":
            problem = stage_problem(value, arch.get("resolution"), arch.get("progressive") is True)
            problems += [problem] if problem else []
        elif name == "aspect":
            problem = aspect_problem(value, arch.get("resolution"))
            problems += [problem] if problem else []
        elif name in OPTIONAL_POSITIVE:
            if value is not None and not (type(value) in (int, float) and math.isfinite(value) and value > 0):
                problems.append(f"{name}={shown(value)}: must be a finite number > 0, or null (none)")
        else:
            problems.append(f"{shown_name(name)}: not an argument of ganforge's networks")
    resolution = arch.get("resolution")
    if type(resolution) is int and not resolution_ok(resolution) and MIN_RESOLUTION <= resolution <= MAX_RESOLUTION:
        problems.append(f"resolution={resolution}: must be {RESOLUTIONS}")
    return problems


def aspect_problem(aspect, resolution) -> str | None:
    """What is wrong with a StyleGAN2 network's `aspect` (rows, cols), or None: the image is resolution x rows high
    and resolution x cols wide, `resolution` the short side, so the factors are powers of two, one of them 1 (every
    block halves both sides down to a 4 x rows by 4 x cols head), and the long side is at most MAX_RESOLUTION."""
    short = resolution if resolution_ok(resolution) else MIN_RESOLUTION
    ok = (
        isinstance(aspect, (list, tuple))
        and len(aspect) == 2
        and all(type(f) is int and 1 <= f <= MAX_RESOLUTION // short and f & (f - 1) == 0 for f in aspect)
        and min(aspect) == 1
    )
    return None if ok else (f"aspect={shown(aspect)}: must be [rows, cols], powers of two, one of them 1, with the "
                            f"long side (resolution x factor) at most {MAX_RESOLUTION}")  # fmt: skip


def shown(value) -> str:
    """A short, bounded text for a value read from an untrusted file, much like its repr: never more than
    MAX_SHOWN_CHARS characters nor more than one line, and computed in time independent of the value's size (no
    repr of a container, a long string or a huge integer)."""
    if value is None or isinstance(value, (bool, float)):
        text = repr(value)
    elif isinstance(value, int):
        text = repr(value) if value.bit_length() <= 64 else f"<an integer of {value.bit_length()} bits>"
    elif isinstance(value, str):
        text = repr(value[: MAX_SHOWN_CHARS + 1])
    elif isinstance(value, (list, tuple)) and len(value) <= MAX_SHOWN_ITEMS and all(map(_scalar, value)):
        inner = ", ".join(map(shown, value))
        text = f"[{inner}]" if isinstance(value, list) else f"({inner}{',' if len(value) == 1 else ''})"
    elif isinstance(value, (list, tuple, dict, set, frozenset)):
        text = f"<a {type(value).__name__} of {len(value)} items>"
    else:
        text = f"<a {type(value).__name__}>"
    return text if len(text) <= MAX_SHOWN_CHARS else text[: MAX_SHOWN_CHARS - 3] + "..."


def shown_name(name) -> str:
    """A name read from an untrusted file (a setting, a module): itself when it is a short printable string, else
    as `shown` writes it."""
    return name if isinstance(name, str) and len(name) <= MAX_SHOWN_CHARS and name.isprintable() else shown(name)


def _scalar(value) -> bool:
    return value is None or type(value) in (bool, int, float, str)
