"""Limits that several commands check, stated once: a dataset `dataset build` accepts is one `train` can use."""

# The networks' block structure halves from the image side down to 4x4, with at least one block above it (and the
# official networks stop at 1024).
MIN_RESOLUTION, MAX_RESOLUTION = 8, 1024
MAX_FP16_RES = 64  # more fp16 resolutions than the network has change nothing
MAX_CHANNELS = 1024  # channel_max: twice config F's 512
MAX_CHANNEL_BASE = MAX_CHANNELS * MAX_RESOLUTION  # channels at r are min(base // r, max): a larger base changes nothing


def resolution_ok(resolution) -> bool:
    """A power of two from MIN_RESOLUTION to MAX_RESOLUTION."""
    return (isinstance(resolution, int) and MIN_RESOLUTION <= resolution <= MAX_RESOLUTION
            and resolution & (resolution - 1) == 0)  # fmt: skip


RESOLUTIONS = f"a power of two from {MIN_RESOLUTION} to {MAX_RESOLUTION}"
