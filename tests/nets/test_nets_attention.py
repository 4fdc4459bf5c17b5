"""Self-attention (SAGAN) in StyleGAN2's G and D: the block equals a slow position-by-position implementation, its
zero gain leaves the networks' outputs unchanged at the start, its parameters are counted by the formula, and the
passes that a penalty differentiates twice get the second derivative of the same function."""

import math

import pytest
import torch

from ganforge.errors import UserError
from ganforge.nets import Discriminator, Generator
from ganforge.nets.attention import SelfAttention, attention_map_bytes, twice_differentiable

ARCH = dict(resolution=32, channel_base=512, channel_max=64)
G_ARCH = ARCH | dict(z_dim=8, w_dim=8, mapping_layers=2)


def slow_attention(block: SelfAttention, x: torch.Tensor) -> torch.Tensor:
    """SAGAN Eq. 1-3 written out in float64, one output position at a time: o_i = W_o sum_j softmax_j(q_i . k_j /
    sqrt(d)) v_j, y = x + gain * o, with each 1x1 projection's weight scaled by 1/sqrt(fan-in)."""

    def project(layer, features):  # features [C, P] -> [C', P]
        weight = layer.weight.double()[:, :, 0, 0] / math.sqrt(layer.weight.shape[1])
        return weight @ features + (0 if layer.bias is None else layer.bias.double()[:, None])

    out = []
    for sample in x.double():
        features = sample.reshape(sample.shape[0], -1)
        q, k, v = (project(layer, features) for layer in (block.query, block.key, block.value))
        attended = torch.zeros_like(q)
        for i in range(q.shape[1]):
            logits = torch.tensor([float(q[:, i] @ k[:, j]) for j in range(k.shape[1])], dtype=torch.float64)
            logits = logits / math.sqrt(q.shape[0])
            weights = torch.exp(logits - logits.max())
            weights = weights / weights.sum()
            attended[:, i] = (v * weights.double()).sum(dim=1)
        o = project(block.out, attended)
        out.append((features + block.gain.double() * o).reshape(sample.shape))
    return torch.stack(out)


def explicit_attention(block: SelfAttention, x: torch.Tensor) -> torch.Tensor:
    """The same function with the [positions, positions] map written out as a matrix and its softmax over the keys
    (differentiable, in x's dtype)."""

    def project(layer, features):  # [N, C, P] -> [N, C', P]
        weight = layer.weight[:, :, 0, 0] / math.sqrt(layer.weight.shape[1])
        return torch.einsum("oc,ncp->nop", weight, features) + (0 if layer.bias is None else layer.bias[None, :, None])

    features = x.flatten(2)
    q, k, v = (project(layer, features) for layer in (block.query, block.key, block.value))
    weights = torch.softmax(torch.einsum("ndi,ndj->nij", q, k) / math.sqrt(q.shape[1]), dim=2)  # over keys j
    o = project(block.out, torch.einsum("ndj,nij->ndi", v, weights))
    return (features + block.gain * o).reshape(x.shape)


def test_the_block_equals_the_slow_reference():
    torch.manual_seed(0)
    block = SelfAttention(16)
    with torch.no_grad():
        block.gain.fill_(0.7)
        for layer in (block.query, block.value, block.out):
            layer.bias.normal_()
    x = torch.randn(2, 16, 4, 4)
    with torch.no_grad():
        got, expected = block(x), slow_attention(block, x)
    assert (got.double() - x.double()).abs().max() > 0.1  # the attention changes the features
    torch.testing.assert_close(got.double(), expected, rtol=1e-5, atol=1e-5)
    with torch.no_grad():
        torch.testing.assert_close(explicit_attention(block.double(), x.double()), expected, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("layout", ["orig", "skip", "resnet"])
def test_attention_starts_as_the_identity_in_g_and_d(layout):
    """At gain 0 a network with attention computes what the same weights compute without it; after a nonzero gain
    it does not."""
    torch.manual_seed(1)
    G = Generator(**G_ARCH, architecture=layout, attention=[8, 32]).eval()
    D = Discriminator(**ARCH, architecture=layout, attention=[16, 32]).eval()
    G_plain = Generator(**G_ARCH, architecture=layout).eval()
    D_plain = Discriminator(**ARCH, architecture=layout).eval()
    for plain, attending in ((G_plain, G), (D_plain, D)):
        missing, unexpected = plain.load_state_dict(attending.state_dict(), strict=False)
        assert not missing and unexpected and all(".attn." in key for key in unexpected)
    z, c = torch.randn(4, 8), torch.zeros(4, 0)
    with torch.no_grad():
        images = G(z, c, noise_mode="const")
        assert torch.equal(images, G_plain(z, c, noise_mode="const"))
        assert torch.equal(D(images, c), D_plain(images, c))
        for block in (G.synthesis.b8.attn, D.b32.attn):
            block.gain.fill_(1.0)
        assert not torch.equal(G(z, c, noise_mode="const"), images)
        assert not torch.equal(D(images, c), D_plain(images, c))


def _attention_parameters(channels: int) -> int:
    inner = max(channels // 8, 1)  # C/8 (SAGAN Sec. 3)
    return 3 * channels * inner + 2 * inner + inner * channels + channels + 1  # q, k (no bias), v; out; gain


def test_parameters_are_the_plain_networks_plus_one_block_per_resolution():
    counts = lambda net: sum(p.numel() for p in net.parameters())  # noqa: E731
    widths = {res: min(512 // res, 64) for res in (8, 16, 32)}
    G = Generator(**G_ARCH, attention=[16, 32])
    assert counts(G) - counts(Generator(**G_ARCH)) == sum(_attention_parameters(widths[r]) for r in (16, 32))
    D = Discriminator(**ARCH, attention=[8])
    assert counts(D) - counts(Discriminator(**ARCH)) == _attention_parameters(widths[8])
    assert G.config["attention"] == [16, 32] and "attention" not in Generator(**G_ARCH).config


@pytest.mark.parametrize("attention", [[4], [64], [16, 16], "16", [16.0]])
def test_attention_only_at_the_networks_block_resolutions(attention):
    with pytest.raises(UserError, match="attention: .* must be a list of distinct powers of two from 8"):
        Generator(**G_ARCH, attention=attention)


def test_a_penalty_differentiates_the_attention_twice_as_the_explicit_map_does():
    """R1 through D with attention: its gradient under `twice_differentiable` (the kernel with a second derivative)
    equals the one of the explicit map, and the attention's own weights get a gradient from it."""
    torch.manual_seed(2)
    D = Discriminator(resolution=8, channel_base=128, channel_max=16, attention=[8])
    with torch.no_grad():
        D.b8.attn.gain.fill_(0.5)
    reals = torch.randn(4, 3, 8, 8)

    def r1_grad(forward):
        x = reals.clone().requires_grad_(True)
        D.zero_grad()
        with twice_differentiable():
            logits = forward(x)
            (grad,) = torch.autograd.grad(logits.sum(), x, create_graph=True)
        grad.square().sum().backward()
        return D.b8.attn.query.weight.grad.clone()

    fused = r1_grad(lambda x: D(x, torch.zeros(4, 0)))
    D.b8.attn.forward = lambda x: explicit_attention(D.b8.attn, x)
    explicit = r1_grad(lambda x: D(x, torch.zeros(4, 0)))
    assert fused.abs().max() > 0 and torch.allclose(fused, explicit, rtol=1e-4, atol=1e-6 * fused.abs().max())


def test_the_map_held_for_a_second_derivative_is_counted():
    # 64x64: 4096 positions, squared, in float32, for 8 images, four maps at once: 2 GiB
    assert attention_map_bytes(64, 8) == 4 * 8 * 4096**2 * 4 == 2 * 2**30
