"""Feature maps of one synthesis layer for one seed, as NVlabs' visualizer shows them: the first channels of the
layer's output, each stretched to the full grey range on its own (their scales differ by orders of magnitude), side by
side. The image goes through generate's own latents and renderer, so the maps are those of the image generate makes.
"""

import numpy as np
import torch

from ganforge.generate import modes
from ganforge.generate.options import GenerateOptions
from ganforge.generate.render import Renderer
from ganforge.generate.run import label_vectors, transform_of
from ganforge.generate.writers import png_bytes

GAP = 1  # black pixels between two maps


def feature_maps_png(G, o: GenerateOptions, layer: str, channels: int) -> bytes:
    """PNG of the first `channels` maps of synthesis layer `layer` (one of Network.layers()) for o's one seed."""
    assert len(o.seeds) == 1, o.seeds
    o.check_network(G)
    keys = modes.Keys(G, o, None, label_vectors(o, G.c_dim))
    captured = []
    hook = G.synthesis.get_submodule(layer).register_forward_hook(lambda module, args, out: captured.append(out))
    renderer = Renderer(G, o.noise_mode, 1, 1, transform_of(o))
    try:
        renderer(keys.ws(0, 1), keys.seeds)
    finally:
        hook.remove()
        renderer.close()
    return png_bytes(_tiled(captured[-1][0, :channels].float().cpu()))


def _tiled(maps: torch.Tensor) -> np.ndarray:
    """maps [C, H, W] -> one grey image [H, C * W + (C - 1) * GAP, 1], each map scaled from its minimum to its
    maximum (a constant map is black)."""
    low = maps.amin(dim=(1, 2), keepdim=True)
    span = (maps.amax(dim=(1, 2), keepdim=True) - low).clamp_min(torch.finfo(torch.float32).tiny)
    grey = ((maps - low) / span * 255).round().to(torch.uint8).numpy()  # [C, H, W]
    count, height, width = grey.shape
    out = np.zeros([height, count * width + (count - 1) * GAP, 1], dtype=np.uint8)
    for k, image in enumerate(grey):
        out[:, k * (width + GAP) : k * (width + GAP) + width, 0] = image
    return out
