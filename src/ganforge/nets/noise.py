"""Per-image noise for StyleGAN2's synthesis layers: each adds noise_const x noise_strength in the `const` noise mode,
so holding [N, 1, H, W] maps in place of the layers' [H, W] constants gives every image of a batch its own noise (a
seed's draw, or the maps a projection optimised), with the network's own constants back afterwards."""

import contextlib

import torch

NOISE_BUFFER = "noise_const"


def noise_buffer_names(G) -> list[str]:
    """The names of G.synthesis's noise constants, in module order (none in StyleGAN3, which has no noise inputs)."""
    return [name for name, _ in G.synthesis.named_buffers() if name.rsplit(".", 1)[-1] == NOISE_BUFFER]


@contextlib.contextmanager
def per_image_noise(G, maps: dict[str, torch.Tensor]):
    """G.synthesis with the noise constants named in `maps` replaced by per-image maps [N, 1, H, W] (a map may
    require grad: a projection optimises it through the synthesis)."""
    owners = {name: G.synthesis.get_submodule(name.rsplit(".", 1)[0]) for name in maps}
    saved = {name: getattr(owner, NOISE_BUFFER) for name, owner in owners.items()}
    try:
        for name, owner in owners.items():
            setattr(owner, NOISE_BUFFER, maps[name])
        yield
    finally:
        for name, owner in owners.items():
            setattr(owner, NOISE_BUFFER, saved[name])
