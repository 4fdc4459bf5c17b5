"""Golden outputs of tiny generators (StyleGAN2, StyleGAN3) and D: any change to the networks' maths (a gain, the
noise placement, a filter alignment) changes these numbers. If a change is intended, it is a behaviour change: say so
and update them."""

import torch

from ganforge.nets import Discriminator, Generator, StyleGAN3Generator, input_transform

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


# (config, mean, std, img[0, 0, 0, :4], img[3, 2, 15, 12:]); when recorded, NVlabs' reference implementation
# (networks_stylegan3 with its reference filtered_lrelu) loaded with the same tensors agreed to within 1.1e-6
STYLEGAN3 = [
    ("t", -0.052247, 0.146198, [0.289691, 0.292033, 0.277297, 0.228728], [0.003869, 0.002384, -0.000266, -0.002589]),
    (
        "r",
        -0.071459,
        0.383129,
        [-0.212183, -0.202098, -0.191551, -0.186610],
        [-0.041326, -0.042797, -0.053331, -0.070705],
    ),
]


def test_tiny_stylegan3_reproduces_recorded_outputs():
    for config, mean, std, corner, edge in STYLEGAN3:
        torch.manual_seed(0)
        G = StyleGAN3Generator(resolution=16, z_dim=8, w_dim=8, channel_base=128, channel_max=8, c_dim=2,
                               conv_clamp=256, config=config)  # fmt: skip
        z = torch.randn(4, 8, generator=torch.Generator().manual_seed(1))
        c = torch.eye(2)[[0, 1, 0, 1]]
        with torch.no_grad():
            G.synthesis(G.mapping(z, c), magnitude_ema_beta=0.5)  # magnitude_ema away from 1
            img = G(z, c, transform=input_transform(translate=(0.05, -0.1), angle=0.3))
        close = dict(rtol=0, atol=1e-5)
        torch.testing.assert_close(img.mean(), torch.tensor(mean), **close)
        torch.testing.assert_close(img.std(), torch.tensor(std), **close)
        torch.testing.assert_close(img[0, 0, 0, :4], torch.tensor(corner), **close)
        torch.testing.assert_close(img[3, 2, 15, 12:], torch.tensor(edge), **close)
