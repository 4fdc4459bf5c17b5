"""Feature maps of one synthesis layer for one image, as NVlabs' visualizer shows them: the first channels of the
layer's output side by side, or one channel enlarged to a readable size; each map stretched to the full grey range on
its own (their scales differ by orders of magnitude). The image goes through generate's own latents and renderer, so
the maps are those of the image generate makes.
"""

import numpy as np
import torch

from ganforge.errors import UserError
from ganforge.generate.inmemory import image_keys
from ganforge.generate.options import GenerateOptions
from ganforge.generate.render import Renderer
from ganforge.generate.run import transform_of
from ganforge.generate.writers import png_bytes

GAP = 1  # black pixels between two maps
ZOOM_PX = 256  # a zoomed map is enlarged by whole pixels to at least this size (when it is smaller)


def layer_output(G, o: GenerateOptions, key: int, layer: str) -> tuple[str, torch.Tensor]:
    """(the image's file name, float32 [C, H, W] on the CPU): synthesis layer `layer`'s output for image `key` of o's
    images mode."""
    o, keys, row_noise = image_keys(G, o, key)
    captured = []
    hook = G.synthesis.get_submodule(layer).register_forward_hook(lambda module, args, out: captured.append(out))
    renderer = Renderer(G, o.noise_mode, 1, 1, transform_of(o), row_noise)
    try:
        renderer(keys.ws(key, key + 1), keys.seeds[key : key + 1])
    finally:
        hook.remove()
        renderer.close()
    return keys.names(key, key + 1)[0], captured[-1][0].float().cpu()


def strip_png(maps: torch.Tensor, channels: int) -> bytes:
    """PNG of the first `channels` maps side by side."""
    return png_bytes(_tiled(_grey(maps[:channels])))


def zoom_png(maps: torch.Tensor, channel: int, layer: str) -> bytes:
    """PNG of map `channel` alone, each of its pixels a square block of at least ZOOM_PX / its size pixels."""
    if channel >= len(maps):
        raise UserError(f"channel={channel}: layer {layer} has {len(maps)} channels, 0 to {len(maps) - 1}")
    return png_bytes(enlarged(_grey(maps[channel : channel + 1])[0]))


def enlarged(image: np.ndarray) -> np.ndarray:
    """[H, W] uint8 -> [sH, sW, 1], each pixel a block of s x s, s the whole factor that brings the long side to at
    least ZOOM_PX (1 for an image that is as large already)."""
    scale = max(1, -(-ZOOM_PX // max(image.shape)))
    return np.repeat(np.repeat(image, scale, axis=0), scale, axis=1)[:, :, None]


def _grey(maps: torch.Tensor) -> np.ndarray:
    """maps [C, H, W] -> uint8 [C, H, W], each map scaled from its minimum to its maximum (a constant map is black)."""
    low = maps.amin(dim=(1, 2), keepdim=True)
    span = (maps.amax(dim=(1, 2), keepdim=True) - low).clamp_min(torch.finfo(torch.float32).tiny)
    return ((maps - low) / span * 255).round().to(torch.uint8).numpy()


def _tiled(grey: np.ndarray) -> np.ndarray:
    """grey [C, H, W] -> one image [H, C * W + (C - 1) * GAP, 1], a black column between two maps."""
    count, height, width = grey.shape
    out = np.zeros([height, count * width + (count - 1) * GAP, 1], dtype=np.uint8)
    for k, image in enumerate(grey):
        out[:, k * (width + GAP) : k * (width + GAP) + width, 0] = image
    return out
