"""Golden outputs of a tiny G and D: any change to the networks' maths (a gain, the noise placement, a filter
alignment) changes these numbers. If a change is intended, it is a behaviour change: say so and update them."""

import torch

from ganforge.nets import Discriminator, Generator

ARCH = dict(resolution=16, channel_base=64, channel_max=8, c_dim=2, conv_clamp=256)


def test_tiny_networks_reproduce_recorded_outputs():
    torch.manual_seed(0)
    G = Generator(**ARCH, z_dim=8, w_dim=8, mapping_layers=2)
    D = Discriminator(**ARCH)
    z = torch.randn(4, 8, generator=torch.Generator().manual_seed(1))
    c = torch.eye(2)[[0, 1, 0, 1]]
    with torch.no_grad():
        for name, p in G.named_parameters():
            if name.endswith("noise_strength"):
                p.fill_(0.1)
        img = G(z, c, noise_mode="const")
        logits = D(img, c).flatten()
    close = dict(rtol=0, atol=1e-4)
    torch.testing.assert_close(img.mean(), torch.tensor(0.060770), **close)
    torch.testing.assert_close(img.std(), torch.tensor(0.934385), **close)
    torch.testing.assert_close(img[0, 0, 0, :4], torch.tensor([0.955879, 1.202959, 1.165524, 1.055715]), **close)
    torch.testing.assert_close(img[3, 2, 15, 12:], torch.tensor([-1.314456, -0.766889, -0.213004, -0.006798]), **close)
    torch.testing.assert_close(logits, torch.tensor([-0.070171, -0.030208, -0.027833, -0.002761]), **close)
