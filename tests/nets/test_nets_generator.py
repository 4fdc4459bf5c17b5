"""Generator behaviour at tiny channel counts: shapes, gradients, determinism, truncation, precision."""

import json

import pytest
import torch

from ganforge.errors import UserError
from ganforge.nets import Generator

TINY = dict(z_dim=8, w_dim=8, channel_base=128, channel_max=8, mapping_layers=2)


def tiny_generator(seed=0, **kwargs) -> Generator:
    torch.manual_seed(seed)
    return Generator(**{**TINY, "resolution": 16, **kwargs})


def inputs(G: Generator, n=2, seed=1):
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(n, G.z_dim, generator=g)
    c = torch.eye(G.c_dim)[torch.arange(n) % G.c_dim] if G.c_dim else torch.zeros(n, 0)
    return z, c


@pytest.mark.parametrize("resolution", [8, 16, 32, 64, 128, 256])
def test_output_shape_dtype_and_num_ws(resolution):
    channels = 1 + resolution % 5  # 4, 2, 3, 5, 4, 2 image channels across the sweep
    G = tiny_generator(resolution=resolution, img_channels=channels, channel_base=2 * resolution)
    z, c = inputs(G)
    img = G(z, c)
    assert img.shape == (2, channels, resolution, resolution) and img.dtype == torch.float32
    assert torch.isfinite(img).all()
    assert G.num_ws == 2 * resolution.bit_length() - 4  # 2 log2(res) - 2: one w per conv and the last toRGB


def test_gradients_reach_every_parameter():
    G = tiny_generator(c_dim=3)
    z, c = inputs(G, n=3)
    G(z, c).square().mean().backward()
    for name, p in G.named_parameters():
        assert p.grad is not None and p.grad.abs().sum() > 0, f"no gradient for {name}"


def test_same_seed_same_output_bitwise_with_const_noise():
    G1, G2 = tiny_generator(seed=5), tiny_generator(seed=5)
    z, c = inputs(G1)
    assert torch.equal(G1(z, c, noise_mode="const"), G2(z, c, noise_mode="const"))
    assert not torch.equal(G1(z, c, noise_mode="const"), tiny_generator(seed=6)(z, c, noise_mode="const"))


def test_noise_modes_use_learned_strength():
    G = tiny_generator()
    z, c = inputs(G)
    with torch.no_grad():
        assert torch.equal(G(z, c, noise_mode="random"), G(z, c, noise_mode="none"))  # strength starts at 0
        for name, p in G.named_parameters():
            if name.endswith("noise_strength"):
                p.fill_(0.5)
        a, b = G(z, c, noise_mode="random"), G(z, c, noise_mode="random")
    assert not torch.equal(a, b)
    assert torch.equal(G(z, c, noise_mode="const"), G(z, c, noise_mode="const"))
    assert not torch.equal(G(z, c, noise_mode="const"), G(z, c, noise_mode="none"))


def test_w_avg_tracking_and_psi_zero_gives_the_average_image():
    G = tiny_generator(c_dim=2)
    z, c = inputs(G, n=4)
    ws = G.mapping(z, c, update_w_avg=True)
    assert torch.allclose(G.mapping.w_avg, ws[:, 0].mean(dim=0) * (1 - 0.995))
    with torch.no_grad():
        img = G(torch.randn(4, G.z_dim) * 3, c, psi=0.0, noise_mode="const")
        avg = G.synthesis(G.mapping.w_avg.expand(1, G.num_ws, -1), noise_mode="const")
    torch.testing.assert_close(img, avg.expand_as(img))


def test_truncation_cutoff_only_touches_the_first_ws():
    G = tiny_generator()
    z, c = inputs(G)
    G.mapping(z, c, update_w_avg=True)
    full, cut = G.mapping(z, c), G.mapping(z, c, psi=0.0, cutoff=2)
    assert torch.equal(cut[:, :2], G.mapping.w_avg.expand(2, 2, -1))
    assert torch.equal(cut[:, 2:], full[:, 2:])


def test_style_mixing_last_w_changes_only_fine_detail():
    G = tiny_generator()
    z, c = inputs(G)
    with torch.no_grad():
        ws = G.mapping(z, c)
        mixed = ws.clone()
        mixed[:, -1] = ws.flip(0)[:, -1]  # the last w drives only the final toRGB
        a, b = G.synthesis(ws, noise_mode="const"), G.synthesis(mixed, noise_mode="const")
    assert not torch.equal(a, b)
    assert (a - b).abs().max() < (a - G.synthesis(ws.flip(0), noise_mode="const")).abs().max()


def test_bf16_autocast_forward_is_finite():
    G = tiny_generator(c_dim=2, conv_clamp=256)
    z, c = inputs(G)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        img = G(z, c)
    assert img.dtype == torch.float32 and torch.isfinite(img).all()


def test_fp16_resolutions_are_fp32_on_cpu():
    G0, G1 = tiny_generator(seed=3), tiny_generator(seed=3, num_fp16_res=2)
    z, c = inputs(G0)
    assert torch.equal(G0(z, c, noise_mode="const"), G1(z, c, noise_mode="const"))


def test_conv_clamp_bounds_every_rgb_contribution():
    G = tiny_generator(conv_clamp=1e-3)
    z, c = inputs(G)
    img = G(z, c)
    # each toRGB output is clamped and FIR upsampling is a convex combination, so |img| <= blocks * clamp
    assert img.abs().max() <= 3 * 1e-3 + 1e-7


def test_eval_mode_matches_training_mode():
    G = tiny_generator(c_dim=2)
    z, c = inputs(G, n=3)
    with torch.no_grad():
        train_img = G.train()(z, c, noise_mode="const")
        eval_img = G.eval()(z, c, noise_mode="const")
    torch.testing.assert_close(eval_img, train_img, rtol=1e-4, atol=1e-5)


def test_config_is_json_and_rebuilds_the_same_architecture():
    G = tiny_generator(c_dim=3, conv_clamp=256, num_fp16_res=1)
    config = json.loads(json.dumps(G.config))
    rebuilt = Generator(**config)
    assert {k: v.shape for k, v in rebuilt.state_dict().items()} == {k: v.shape for k, v in G.state_dict().items()}
    assert rebuilt.config == G.config


def test_bad_arguments_are_reported_together():
    with pytest.raises(UserError) as err:
        Generator(resolution=48, img_channels=0, conv_clamp=-1)
    assert len(err.value.problems) == 3
    assert "resolution: 48" in str(err.value) and "img_channels" in str(err.value)
    with pytest.raises(UserError, match="resolution: 2048"):
        Generator(resolution=2048)


def test_path_length_double_backward_reaches_the_synthesis_weights():
    G = tiny_generator()
    z, c = inputs(G)
    ws = G.mapping(z, c).detach().requires_grad_(True)
    img = G.synthesis(ws, noise_mode="const")
    (grad,) = torch.autograd.grad((img * torch.randn_like(img)).sum(), ws, create_graph=True)
    grad.square().sum(dim=2).mean().sqrt().backward()  # path-length regularizer (StyleGAN2 Eq. 4) shape
    for name, p in G.synthesis.named_parameters():
        if not name.endswith(("noise_strength", "torgb.bias")):  # these do not enter the Jacobian
            assert p.grad is not None and p.grad.abs().sum() > 0, f"no path-length gradient for {name}"
