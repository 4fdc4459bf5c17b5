"""StyleGAN3 generator: official parameter/buffer counts and layer names, modulated conv against a per-sample
reference, the Fourier input's transform, magnitude EMA, config round trip and bad arguments."""

import json
import math

import pytest
import torch

from ganforge.errors import UserError
from ganforge.nets import Discriminator, StyleGAN3Generator, input_transform
from ganforge.nets.stylegan3_layers import Band, SynthesisInput, modulated_conv2d

# config, resolution, channel_base, channel_max, G params, G buffer elements, D params (official; z = w = 512, RGB)
OFFICIAL = [
    ("t", 1024, 32768, 512, 22_313_167, 2_480, 29_012_513),
    ("r", 1024, 32768, 512, 15_093_151, 5_600, 29_012_513),
    ("t", 256, 32768, 512, 28_472_133, 2_456, 28_864_129),
    ("r", 256, 32768, 512, 18_816_387, 5_576, 28_864_129),
    ("t", 256, 16384, 512, 23_320_443, 2_456, 24_001_089),
]
# layer names of official StyleGAN3 networks (FFHQ-1024 T, 256 px T with channel_base 32768 and 16384)
OFFICIAL_NAMES = {
    (1024, 32768): "L0_36_512 L1_36_512 L2_52_512 L3_52_512 L4_84_512 L5_148_512 L6_148_512 L7_276_323 L8_276_203 "
    "L9_532_128 L10_1044_81 L11_1044_51 L12_1044_32 L13_1024_32 L14_1024_3",
    (256, 32768): "L0_36_512 L1_36_512 L2_36_512 L3_52_512 L4_52_512 L5_84_512 L6_84_512 L7_148_512 L8_148_512 "
    "L9_148_362 L10_276_256 L11_276_181 L12_276_128 L13_256_128 L14_256_3",
    (256, 16384): "L0_36_512 L1_36_512 L2_36_512 L3_52_512 L4_52_512 L5_84_512 L6_84_512 L7_148_362 L8_148_256 "
    "L9_148_181 L10_276_128 L11_276_91 L12_276_64 L13_256_64 L14_256_3",
}
TINY = dict(resolution=16, z_dim=8, w_dim=8, channel_base=128, channel_max=8)


def count(tensors) -> int:
    return sum(t.numel() for t in tensors)


@pytest.mark.parametrize(("config", "resolution", "base", "cmax", "g", "g_buffers", "d"), OFFICIAL)
def test_counts_equal_official(config, resolution, base, cmax, g, g_buffers, d):
    with torch.device("meta"):  # shapes only
        G = StyleGAN3Generator(resolution=resolution, channel_base=base, channel_max=cmax, config=config)
        D = Discriminator(resolution=resolution, channel_base=base, channel_max=cmax)
    assert (count(G.parameters()), count(G.buffers()), count(D.parameters())) == (g, g_buffers, d)
    if config == "t" and (resolution, base) in OFFICIAL_NAMES:
        assert " ".join(G.synthesis.layer_names) == OFFICIAL_NAMES[resolution, base]
    keys = G.state_dict().keys()
    assert {"mapping.fc1.weight", "mapping.w_avg", "synthesis.input.affine.weight", "synthesis.input.transform",
            "synthesis.input.freqs", "synthesis.input.phases"} <= keys  # fmt: skip
    last = G.synthesis.layer_names[-1]
    assert f"synthesis.{last}.magnitude_ema" in keys and f"synthesis.{last}.up_filter" not in keys  # None buffer


def test_config_r_widens_uses_1x1_convs_and_radial_filters():
    G = StyleGAN3Generator(**TINY, config="r")
    assert G.config["channel_base"] == 128 and G.synthesis.L0_36_16.weight.shape == (16, 16, 1, 1)
    radial = [getattr(G.synthesis, n).down_filter.ndim == 2 for n in G.synthesis.layer_names[:-1]]
    assert radial == [True] * 12 + [False] * 2  # the two critically sampled layers keep separable filters
    T = StyleGAN3Generator(**TINY, config="t")
    assert T.synthesis.L0_36_8.weight.shape == (8, 8, 3, 3) and T.synthesis.L0_36_8.down_filter.ndim == 1


def per_sample_modconv(x, weight, styles, padding, demodulate, gain):
    """The official recipe, literally: normalise, build each sample's weights, demodulate, scale, convolve."""
    out = []
    if demodulate:
        weight = weight * weight.square().mean(dim=[1, 2, 3], keepdim=True).rsqrt()
        styles = styles * styles.square().mean().rsqrt()
    for n in range(x.shape[0]):
        w = weight * styles[n].reshape(1, -1, 1, 1)
        if demodulate:
            w = w * (w.square().sum(dim=[1, 2, 3], keepdim=True) + 1e-8).rsqrt()
        out.append(torch.nn.functional.conv2d(x[n : n + 1], w * gain, padding=padding))
    return torch.cat(out)


@pytest.mark.parametrize(("kernel", "demodulate"), [(3, True), (1, True), (1, False)])
def test_modulated_conv_equals_per_sample_weights(kernel, demodulate):
    gen = torch.Generator().manual_seed(kernel)
    x = torch.randn(3, 5, 7, 7, generator=gen, dtype=torch.float64)
    weight = torch.randn(4, 5, kernel, kernel, generator=gen, dtype=torch.float64)
    styles = torch.randn(3, 5, generator=gen, dtype=torch.float64)
    gain = torch.tensor(0.7, dtype=torch.float64)
    got = modulated_conv2d(x, weight, styles, kernel - 1, demodulate=demodulate, input_gain=gain)
    expected = per_sample_modconv(x, weight, styles, kernel - 1, demodulate, gain)
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)


def fourier_input(seed: int = 0) -> SynthesisInput:
    torch.manual_seed(seed)
    layer = SynthesisInput(w_dim=4, band=Band(size=20, sampling_rate=16, cutoff=2.0, half_width=2.0, channels=6))
    with torch.no_grad():
        layer.affine.weight.normal_()  # a non-trivial learned rotation and translation
    return layer


def test_fourier_input_translates_by_whole_samples_exactly():
    layer, w = fourier_input(), torch.randn(2, 4)
    base = layer(w)
    shifted = layer(w, input_transform(translate=(3 / 16, -2 / 16)))  # 3 samples right, 2 up
    torch.testing.assert_close(shifted[:, :, :-2, 3:], base[:, :, 2:, :-3], rtol=0, atol=2e-5)
    assert (shifted - base).abs().max() > 0.1


def test_fourier_input_rotates_counterclockwise_and_accepts_per_sample_transforms():
    layer, w = fourier_input(1), torch.randn(2, 4)
    base = layer(w)
    quarter = input_transform(angle=math.pi / 2)
    torch.testing.assert_close(layer(w, quarter), torch.rot90(base, 1, dims=(2, 3)), rtol=0, atol=2e-5)
    per_sample = torch.stack([torch.eye(3), quarter])
    mixed = layer(w, per_sample)
    torch.testing.assert_close(mixed[0], base[0])
    torch.testing.assert_close(mixed[1], torch.rot90(base[1], 1, dims=(1, 2)), rtol=0, atol=2e-5)
    with torch.no_grad():
        layer.transform.copy_(quarter)  # the buffer is the default transform, as in official networks
    torch.testing.assert_close(layer(w), torch.rot90(base, 1, dims=(2, 3)), rtol=0, atol=2e-5)


def test_input_transform_is_the_inverse_motion():
    m = input_transform(translate=(0.25, -0.5), angle=0.3)
    c, s = math.cos(0.3), math.sin(0.3)
    motion = torch.tensor([[c, s, 0.25], [-s, c, -0.5], [0, 0, 1]])
    torch.testing.assert_close(m @ motion, torch.eye(3), rtol=0, atol=1e-6)


def test_forward_shapes_magnitude_ema_and_truncation():
    torch.manual_seed(0)
    G = StyleGAN3Generator(**TINY, c_dim=2, img_channels=1)
    z, c = torch.randn(2, 8), torch.eye(2)
    img = G(z, c, noise_mode="const")
    assert img.shape == (2, 1, 16, 16) and img.dtype == torch.float32 and img.isfinite().all()
    assert G.num_ws == 16 and all(b.item() == 1 for n, b in G.named_buffers() if n.endswith("magnitude_ema"))
    ws = G.mapping(z, c)
    G.synthesis(ws, magnitude_ema_beta=0.5)
    emas = [getattr(G.synthesis, n).magnitude_ema.item() for n in G.synthesis.layer_names]
    assert all(e != 1 for e in emas)  # each is the mean of 1 and its input's mean square
    G.synthesis(ws)
    assert emas == [getattr(G.synthesis, n).magnitude_ema.item() for n in G.synthesis.layer_names]
    G.mapping.w_avg.copy_(ws[0, 0])
    torch.testing.assert_close(G(z[:1], c[:1], psi=0.0), G(torch.randn(1, 8), c[:1], psi=0.0))


def test_backward_reaches_every_parameter():
    torch.manual_seed(0)
    G = StyleGAN3Generator(**TINY, config="r")
    G(torch.randn(2, 8), torch.zeros(2, 0)).square().mean().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for n, p in G.named_parameters()), [
        n for n, p in G.named_parameters() if p.grad is None or p.grad.abs().sum() == 0
    ]


def test_config_round_trip_and_bad_arguments():
    G = StyleGAN3Generator(**TINY, config="r", conv_clamp=256)
    again = StyleGAN3Generator(**json.loads(json.dumps(G.config)))
    assert again.config == G.config and again.config["config"] == "r"
    assert {k: v.shape for k, v in again.state_dict().items()} == {k: v.shape for k, v in G.state_dict().items()}
    with pytest.raises(UserError) as err:
        StyleGAN3Generator(**{**TINY, "resolution": 24}, config="x", num_layers=2)
    assert [p.split(":")[0] for p in err.value.problems] == ["resolution", "config", "num_layers"]


def test_fewer_layers_keep_the_schedule_end_points():
    G = StyleGAN3Generator(**TINY, num_layers=4)
    assert G.num_ws == 6 and G.synthesis.layer_names == ["L0_36_8", "L1_36_8", "L2_36_8", "L3_16_8", "L4_16_3"]
    first, last = G.synthesis.L0_36_8, G.synthesis.L3_16_8
    assert (first.out.cutoff, last.out.cutoff) == (2.0, 8.0)
    assert [getattr(G.synthesis, n).critically_sampled for n in G.synthesis.layer_names] == [False, False] + [True] * 3
    assert G(torch.randn(2, 8), torch.zeros(2, 0)).shape == (2, 3, 16, 16)
