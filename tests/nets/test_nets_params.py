"""Parameter counts equal the official StyleGAN2 architecture's; the per-layer summary accounts for all of them."""

import pytest
import torch

from ganforge.nets import Discriminator, Generator, summary

# resolution, channel_base, channel_max, mapping_layers, c_dim, G params, D params (official, z_dim = w_dim = 512)
OFFICIAL = [
    (1024, 32768, 512, 8, 0, 30_370_060, 29_012_513),
    (256, 16384, 512, 8, 0, 24_767_458, 24_001_089),
    (32, 16384, 512, 2, 10, 20_215_315, 23_876_096),
    (32, 4096, 128, 2, 0, 2_284_307, 1_346_305),
]


def count(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


@pytest.mark.parametrize(("resolution", "channel_base", "channel_max", "mapping_layers", "c_dim", "g", "d"), OFFICIAL)
def test_parameter_counts_equal_official(resolution, channel_base, channel_max, mapping_layers, c_dim, g, d):
    arch = dict(resolution=resolution, channel_base=channel_base, channel_max=channel_max, c_dim=c_dim)
    with torch.device("meta"):  # shapes only: no memory, no random init
        G = Generator(**arch, mapping_layers=mapping_layers, z_dim=512, w_dim=512)
        D = Discriminator(**arch, mapping_layers=mapping_layers)
    assert count(G) == g
    assert count(D) == d


def test_summary_lists_layers_with_shapes_and_totals():
    torch.manual_seed(0)
    G = Generator(resolution=8, z_dim=8, w_dim=8, channel_base=64, channel_max=8, mapping_layers=2, c_dim=2)
    D = Discriminator(resolution=8, channel_base=64, channel_max=8, c_dim=2)
    z, c = torch.randn(2, 8), torch.eye(2)
    text = summary(G, z, c)
    assert "synthesis.b8.conv0" in text and "[2, 8, 8, 8]" in text and "[2, 3, 8, 8]" in text
    rows = [line.split() for line in text.splitlines()[1:] if line.split() and line.split()[0][0].islower()]
    assert sum(int(r[-1].replace(",", "")) for r in rows) == count(G)
    assert f"{count(G):,} parameters" in text
    text = summary(D, torch.randn(2, 3, 8, 8), c)
    assert "b4.out" in text and f"{count(D):,} parameters" in text
