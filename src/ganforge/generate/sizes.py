"""The size of the images `ganforge generate` writes: a network's images (metrics.shapes.image_size: (H, W),
non-square for a StyleGAN2 with an aspect) brought to `--size`, the short side, the aspect kept; and how messages show
an image size."""


def shown_size(made: tuple[int, int], size: int | None) -> tuple[int, int]:
    """(H, W) of images made (H, W) once brought to `--size` (None: as made): the short side becomes `size` and the
    long one keeps the aspect (the sides of a non-square network are a power of two apart, so both stay whole)."""
    if size is None:
        return made
    short = min(made)
    return made[0] * size // short, made[1] * size // short


def describe(size: tuple[int, int]) -> str:
    """An image size as messages show it: '256 px' when square, else 'WxH px' ('512x256 px' is 512 wide)."""
    height, width = size
    return f"{height} px" if height == width else f"{width}x{height} px"
