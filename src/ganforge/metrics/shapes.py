"""The size of a generator's images, (height, width), read the same way by metrics, generate, export and project.

A StyleGAN2 generator built with an aspect (rows, cols) makes non-square images, resolution x rows tall by
resolution x cols wide, and says so in `image_size`; its `resolution` is the short side. StyleGAN3 and R3GAN
generators (and stand-ins with only a `resolution`) are square and may lack the attribute: resolution x resolution.
"""


def image_size(G) -> tuple[int, int]:
    """(H, W) of the images G makes: its `image_size`, else (resolution, resolution) for the square families."""
    size = getattr(G, "image_size", None)
    return (G.resolution, G.resolution) if size is None else (int(size[0]), int(size[1]))


def aspect(G) -> tuple[int, int]:
    """(rows, cols) of G's images: H = resolution x rows, W = resolution x cols; (1, 1) when square."""
    height, width = image_size(G)
    return height // G.resolution, width // G.resolution
