"""The networks `ganforge explore` serves: each --network source resolved to a file (a run folder to its newest
snapshot), loaded once, and described for the page (what it can be asked: classes, ws, StyleGAN3 moves, layers)."""

import dataclasses
from pathlib import Path

import torch

from ganforge.generate.options import COARSE_STYLES
from ganforge.interop import load_network
from ganforge.interop.sources import network_file
from ganforge.metrics.shapes import image_size

# StyleGAN Sec. 3.1: coarse styles (4^2-8^2), middle (16^2-32^2) and fine (64^2 and up), two ws per resolution
STYLE_GROUPS = (("coarse", 0, 4), ("middle", 4, 8), ("fine", 8, None))
LAYER_CLASS = "SynthesisLayer"  # the convolution layers of StyleGAN2's blocks and StyleGAN3's synthesis network


@dataclasses.dataclass(frozen=True)
class Network:
    """One --network: the file it was loaded from (what a generate command names) and the generator."""

    file: Path
    G: torch.nn.Module

    def layers(self) -> list[str]:
        """The synthesis layers whose feature maps can be shown, input side first."""
        synthesis = getattr(self.G, "synthesis", None)
        if synthesis is None:
            return []
        return [name for name, module in synthesis.named_modules() if type(module).__name__ == LAYER_CLASS]

    def describe(self, index: int) -> dict:
        """What the page needs to know to offer only what this network can do."""
        G = self.G
        height, width = image_size(G)
        return {
            "index": index,
            "name": self.file.name,
            "height": height,
            "width": width,
            "c_dim": G.c_dim,
            "num_ws": G.num_ws,
            "w_space": G.has_w_space,
            "w_dim": G.w_dim if G.has_w_space else 0,
            "stylegan3": hasattr(getattr(G, "synthesis", None), "input"),
            "layers": self.layers(),
            "style_groups": style_groups(G.num_ws) if G.has_w_space else {},
            "default_mix": f"{COARSE_STYLES[0]}-{min(COARSE_STYLES[-1], G.num_ws - 1)}",
        }


def style_groups(num_ws: int) -> dict[str, str]:
    """{group: "first-last"} of the ws each style group holds in a network of num_ws ws; empty groups left out."""
    groups = {}
    for name, first, stop in STYLE_GROUPS:
        last = num_ws - 1 if stop is None else min(stop, num_ws) - 1
        if first <= last:
            groups[name] = f"{first}-{last}"
    return groups


def load_networks(sources: list[Path], device: torch.device) -> list[Network]:
    """Every --network loaded on `device`, in order; UserError naming the source that cannot be."""
    networks = []
    for source in sources:
        file = network_file(source)
        G, _meta = load_network(file, device=device)
        networks.append(Network(file, G))
    return networks
