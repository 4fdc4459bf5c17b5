"""Whole networks and the discriminator's downsampling convolutions against the float64 references of
nets_reference.py (assembled from the papers' definitions by parameter name), so the recorded golden outputs rest on
an independent computation, not only on themselves."""

import pytest
import torch
from nets_reference import conv_reference, discriminator_reference, mapping_reference, synthesis_reference

from ganforge.nets import Discriminator, Generator
from ganforge.nets.layers import Conv2dLayer

ARCH = dict(channel_base=64, channel_max=4, img_channels=3)


def _randomise(module: torch.nn.Module, seed: int) -> None:
    """Non-zero biases and noise strengths, so every term of the forward pass shows in the output."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.endswith(("bias", "noise_strength")):
                p.copy_(torch.randn(p.shape, generator=gen) * 0.3)


def _state(module: torch.nn.Module) -> dict:
    return {name: value.double() for name, value in module.state_dict().items()}


@pytest.mark.parametrize("kernel", [1, 3, 5])
def test_downsampling_conv_is_convolution_then_fir_decimation(kernel):
    torch.manual_seed(0)
    layer = Conv2dLayer(3, 5, kernel, bias=False, down=True)
    x = torch.randn(2, 3, 8, 8, dtype=torch.float64)
    expected = conv_reference(x, layer.weight.detach().double(), None, down=True)
    assert expected.shape == (2, 5, 4, 4)
    torch.testing.assert_close(layer.double()(x).detach(), expected, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize(("resolution", "architecture"), [(8, "skip"), (16, "skip"), (16, "orig"), (16, "resnet")])
def test_generator_equals_the_reference_forward(resolution, architecture):
    torch.manual_seed(1)
    G = Generator(resolution=resolution, z_dim=6, w_dim=6, mapping_layers=2, architecture=architecture, **ARCH)
    _randomise(G, seed=2)
    z = torch.randn(2, 6, generator=torch.Generator().manual_seed(3))
    ws = mapping_reference(_state(G), z.double(), num_layers=2, num_ws=G.num_ws)
    torch.testing.assert_close(G.mapping(z, torch.zeros(2, 0)).double(), ws, rtol=1e-5, atol=1e-6)
    ws = ws + torch.randn(ws.shape, generator=torch.Generator().manual_seed(7), dtype=ws.dtype)  # a w per layer
    expected = synthesis_reference(_state(G), ws, resolution, architecture)
    image = G.synthesis(ws.float(), noise_mode="const").double()
    assert image.shape == expected.shape == (2, 3, resolution, resolution)
    torch.testing.assert_close(image, expected, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(("resolution", "architecture"), [(8, "resnet"), (16, "resnet"), (16, "orig"), (16, "skip")])
def test_discriminator_equals_the_reference_forward(resolution, architecture):
    torch.manual_seed(4)
    D = Discriminator(resolution=resolution, mbstd_group_size=2, architecture=architecture, **ARCH)
    _randomise(D, seed=5)
    img = torch.randn(4, 3, resolution, resolution, generator=torch.Generator().manual_seed(6))
    expected = discriminator_reference(_state(D), img.double(), resolution, group=2, architecture=architecture)
    torch.testing.assert_close(D(img, torch.zeros(4, 0)).double(), expected, rtol=1e-4, atol=1e-5)
