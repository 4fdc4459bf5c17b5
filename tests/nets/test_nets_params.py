"""Parameter counts equal the official StyleGAN2 architecture's, for each of its G and D architectures; the per-layer
summary accounts for all of them."""

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


# Every architecture of G and D (orig, skip, resnet), read from stylegan2-ada-pytorch's networks built on CPU with
# z_dim = w_dim = 512: resolution, channel_base, channel_max, mapping_layers, c_dim, {architecture: (G, D params)}.
OFFICIAL_ARCHITECTURES = [
    (32, 4096, 128, 2, 0, {"orig": (2_086_154, 1_297_153), "skip": (2_284_307, 1_298_689),
                           "resnet": (2_135_306, 1_346_305)}),
    (32, 16384, 512, 2, 10, {"orig": (19_422_730, 23_089_664), "skip": (20_215_315, 23_095_808),
                             "resnet": (20_209_162, 23_876_096)}),
    (256, 16384, 512, 8, 0, {"orig": (23_512_528, 23_042_625), "skip": (24_767_458, 23_052_353),
                             "resnet": (24_470_992, 24_001_089)}),
    (64, 2048, 64, 2, 3, {"orig": (1_372_332, 390_240), "skip": (1_504_440, 391_264), "resnet": (1_386_668, 404_576)}),
]  # fmt: skip


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


@pytest.mark.parametrize(("resolution", "channel_base", "channel_max", "mapping_layers", "c_dim", "counts"),
                         OFFICIAL_ARCHITECTURES)  # fmt: skip
def test_parameter_counts_equal_official_for_every_architecture(
    resolution, channel_base, channel_max, mapping_layers, c_dim, counts
):
    arch = dict(resolution=resolution, channel_base=channel_base, channel_max=channel_max, c_dim=c_dim)
    for architecture, (g, d) in counts.items():
        with torch.device("meta"):
            G = Generator(**arch, mapping_layers=mapping_layers, z_dim=512, w_dim=512, architecture=architecture)
            D = Discriminator(**arch, architecture=architecture)
        assert (count(G), count(D)) == (g, d), architecture
        assert G.synthesis.num_ws == 2 * len(G.synthesis.block_resolutions)  # a w per conv, the last toRGB


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
