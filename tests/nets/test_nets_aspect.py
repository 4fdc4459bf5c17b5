"""Non-square StyleGAN2 networks (`aspect` = (rows, cols)): images [resolution x rows, resolution x cols] through every
G and D layout, the const, noise and D head in the aspect's shape (the first block against a hand computation),
square networks exactly as without the argument (down to a snapshot's bytes), and a hostile stored aspect refused."""

import json

import pytest
import safetensors.torch
import torch
import torch.nn.functional as F

from ganforge.errors import UserError
from ganforge.limits import aspect_problem
from ganforge.nets import Discriminator, Generator, StyleGAN3Generator, winograd
from ganforge.nets.growth import blended_reals, resized
from ganforge.nets.layers import LRELU_GAIN, LRELU_SLOPE, downsample2d, fir_kernel
from ganforge.snapshot import (
    check_weights_file,
    content_sha256,
    load_discriminator,
    load_snapshot,
    save_discriminator,
    save_snapshot,
)

TINY = dict(resolution=8, channel_base=256, channel_max=32, c_dim=2)
G_TINY = TINY | dict(z_dim=32, w_dim=32, mapping_layers=2)
D_TINY = TINY | dict(mbstd_group_size=2)
ASPECTS = ((1, 2), (2, 1))
LAYOUTS = (("skip", "resnet"), ("orig", "skip"), ("resnet", "orig"))  # (G's, D's): every layout of each once


def networks(aspect, g_arch="skip", d_arch="resnet", seed=0, **kwargs):
    torch.manual_seed(seed)
    G = Generator(**G_TINY, architecture=g_arch, aspect=aspect, **kwargs)
    D = Discriminator(**D_TINY, architecture=d_arch, aspect=aspect, **kwargs)
    return G, D


def inputs(n=2, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, G_TINY["z_dim"], generator=g), torch.eye(2)[torch.arange(n) % 2]


@pytest.mark.parametrize("aspect", ASPECTS)
@pytest.mark.parametrize(("g_arch", "d_arch"), LAYOUTS)
def test_g_and_d_run_forward_and_backward_at_the_aspect(aspect, g_arch, d_arch):
    G, D = networks(aspect, g_arch, d_arch)
    z, c = inputs()
    img = G(z, c)
    assert img.shape == (2, 3, 8 * aspect[0], 8 * aspect[1]) == (2, 3, *G.image_size)
    assert D.image_size == G.image_size
    reals = torch.randn(img.shape, requires_grad=True)
    (r1_grad,) = torch.autograd.grad(D(reals, c).sum(), reals, create_graph=True)  # R1's gradient, twice differentiable
    assert r1_grad.shape == reals.shape
    logits = D(img, c)
    assert logits.shape == (2, 1) and torch.isfinite(logits).all()
    (logits.sum() + r1_grad.square().sum()).backward()
    for name, p in [*G.named_parameters(), *D.named_parameters()]:
        assert p.grad is not None and p.grad.abs().sum() > 0, f"no gradient for {name}"


@pytest.mark.parametrize("aspect", ASPECTS)
def test_the_const_the_noise_and_the_d_head_have_the_aspects_shape(aspect):
    G, D = networks(aspect)
    rows, cols = aspect
    assert G.synthesis.b4.const.shape == (32, 4 * rows, 4 * cols)
    noise = {name: tuple(b.shape) for name, b in G.synthesis.named_buffers() if name.endswith("noise_const")}
    assert noise == {"b4.conv1.noise_const": (4 * rows, 4 * cols), "b8.conv0.noise_const": (8 * rows, 8 * cols),
                     "b8.conv1.noise_const": (8 * rows, 8 * cols)}  # fmt: skip
    assert D.b4.fc.weight.shape == (32, 32 * 4 * rows * 4 * cols)
    # blocks keep the short side's names and channel counts: the square network's parameters, but for these two
    square_G, square_D = networks((1, 1))
    for net, square, grown in ((G, square_G, "synthesis.b4.const"), (D, square_D, "b4.fc.weight")):
        shapes = {k: v.shape for k, v in net.state_dict().items() if k != grown and "noise_const" not in k}
        assert shapes == {k: v.shape for k, v in square.state_dict().items() if k != grown and "noise_const" not in k}


def test_the_first_block_is_the_const_as_4_by_8_through_a_hand_written_modulated_conv_and_torgb():
    G, _ = networks((1, 2))
    block = G.synthesis.b4
    with torch.no_grad():  # non-zero noise strength and biases, so each term shows
        block.conv1.noise_strength.fill_(0.7)
        block.conv1.bias.normal_()
        block.torgb.bias.normal_()
    ws = torch.randn(2, 2, G.w_dim, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        x, img = block(None, None, ws, noise_mode="const")
        layer, rgb = block.conv1, block.torgb
        for i in range(2):
            weight = layer.weight * layer.affine(ws[i : i + 1, 0]).reshape(1, -1, 1, 1)  # StyleGAN2 Eq. 1
            weight = weight / weight.square().sum(dim=[1, 2, 3], keepdim=True).add(1e-8).sqrt()  # Eq. 3
            y = F.conv2d(block.const.reshape(1, 32, 4, 8), weight, padding=1)
            y = y + layer.noise_const.reshape(1, 1, 4, 8) * layer.noise_strength
            y = F.leaky_relu(y + layer.bias.reshape(1, -1, 1, 1), LRELU_SLOPE) * LRELU_GAIN
            torch.testing.assert_close(x[i : i + 1], y, rtol=1e-5, atol=1e-5)
            styles = rgb.affine(ws[i : i + 1, 1]) * rgb.weight_gain
            expected = F.conv2d(y, rgb.weight * styles.reshape(1, -1, 1, 1)) + rgb.bias.reshape(1, -1, 1, 1)
            torch.testing.assert_close(img[i : i + 1], expected, rtol=1e-5, atol=1e-5)


def test_random_noise_has_each_layers_shape_and_changes_the_image():
    G, _ = networks((2, 1))
    with torch.no_grad():
        for name, p in G.named_parameters():
            if name.endswith("noise_strength"):
                p.fill_(0.5)
        z, c = inputs()
        a, b = G(z, c), G(z, c)
    assert a.shape == (2, 3, 16, 8) and not torch.equal(a, b)


def test_a_square_network_is_the_one_built_without_the_argument(tmp_path):
    z, c = inputs()
    built = {}
    for aspect in (None, (1, 1), [1, 1]):
        torch.manual_seed(0)
        G = Generator(**G_TINY) if aspect is None else Generator(**G_TINY, aspect=aspect)
        D = Discriminator(**D_TINY) if aspect is None else Discriminator(**D_TINY, aspect=aspect)
        assert "aspect" not in G.config and "aspect" not in D.config
        save_snapshot(tmp_path / "G.safetensors", G, {"kimg": 1})
        save_discriminator(tmp_path / "D.safetensors", D, {})
        with torch.no_grad():
            out = (G(z, c, noise_mode="const"), D(G(z, c, noise_mode="const"), c))
        files = ((tmp_path / "G.safetensors").read_bytes(), (tmp_path / "D.safetensors").read_bytes())
        built[aspect if aspect is None else tuple(aspect)] = (G.state_dict(), D.state_dict(), out, files)
    reference = built.pop(None)
    for same in built.values():
        for state, expected in zip(same[:2], reference[:2], strict=True):
            assert list(state) == list(expected) and all(torch.equal(state[k], expected[k]) for k in state)
        assert all(torch.equal(a, b) for a, b in zip(same[2], reference[2], strict=True))
        assert same[3] == reference[3]  # snapshot and discriminator files byte-identical


def test_config_records_the_aspect_as_a_list_and_rebuilds_the_architecture():
    G, D = networks((1, 2))
    assert G.config["aspect"] == [1, 2] and D.config["aspect"] == [1, 2] and G.aspect == (1, 2)
    for net, cls in ((G, Generator), (D, Discriminator)):
        rebuilt = cls(**json.loads(json.dumps(net.config)))
        assert {k: v.shape for k, v in rebuilt.state_dict().items()} == {
            k: v.shape for k, v in net.state_dict().items()
        }
        assert rebuilt.config == net.config
    assert Discriminator(**{**G.config, "mbstd_group_size": 2}).image_size == (8, 16)  # one dict builds both


def test_snapshots_of_non_square_networks_load_as_they_were_saved(tmp_path):
    G, D = networks((2, 1))
    z, c = inputs()
    save_snapshot(tmp_path / "G.safetensors", G, {})
    save_discriminator(tmp_path / "D.safetensors", D, {})
    G2, _ = load_snapshot(tmp_path / "G.safetensors")
    D2, _ = load_discriminator(tmp_path / "D.safetensors")
    assert G2.config == G.config and D2.config == D.config
    with torch.no_grad():
        img = G.eval()(z, c, noise_mode="const")
        assert img.shape == (2, 3, 16, 8) and torch.equal(G2(z, c, noise_mode="const"), img)
        assert torch.equal(D2(img, c), D.eval()(img, c))


def signed(path, net, key, **changes):
    """A copy of `net`'s file at `path` with its recorded arguments changed, and a checksum that matches."""
    file_format = "ganforge-snapshot" if key == "generator" else "ganforge-discriminator"
    metadata = {"format": file_format, "format_version": "1", "architecture": "stylegan2",
                key: json.dumps(net.config | changes), "meta": "{}"}  # fmt: skip
    tensors = net.state_dict()
    metadata["content_sha256"] = content_sha256(metadata, tensors)
    safetensors.torch.save_file(tensors, path, metadata=metadata)
    return path


RULE = "must be [rows, cols], powers of two, one of them 1, with the long side (resolution x factor) at most 1024"


@pytest.mark.parametrize(
    ("aspect", "shown"),
    [([3, 1], "[3, 1]"), ([1, 1, 1], "[1, 1, 1]"), ([0, 1], "[0, 1]"), ([1, 4096], "[1, 4096]"), ("x", "'x'"),
     ([2, 2], "[2, 2]"), ([1, 2.0], "[1, 2.0]"), ([True, 1], "[True, 1]"), ([1, -2], "[1, -2]"),
     ([1, 2**200], "[1, <an integer of 201 bits>]"), (None, "None"), ([1, 256], "[1, 256]")],
)  # fmt: skip
def test_a_hostile_stored_aspect_is_refused_before_anything_is_built(tmp_path, aspect, shown):
    G, D = networks((1, 2))
    problem = f"unsupported architecture, aspect={shown}: {RULE}"
    path = signed(tmp_path / "G.safetensors", G, "generator", aspect=aspect)
    for read in (load_snapshot, check_weights_file):
        with pytest.raises(UserError) as err:
            read(path)
        assert err.value.problems == [f"{path}: {problem}"]
    path = signed(tmp_path / "D.safetensors", D, "discriminator", aspect=aspect)
    with pytest.raises(UserError) as err:
        load_discriminator(path)
    assert err.value.problems == [f"{path}: {problem}"]


def test_a_bad_aspect_is_listed_with_the_other_problems_of_a_stored_architecture(tmp_path):
    G, _ = networks((1, 2))
    path = signed(tmp_path / "G.safetensors", G, "generator", aspect=[2, 2], mapping_layers=10**7)
    with pytest.raises(UserError) as err:
        load_snapshot(path)
    assert err.value.problems == [
        f"{path}: unsupported architecture, mapping_layers=10000000: must be an integer from 1 to 32",
        f"{path}: unsupported architecture, aspect=[2, 2]: {RULE}",
    ]


def test_the_constructors_refuse_a_bad_aspect_with_the_rule_and_stylegan3_takes_none(tmp_path):
    for cls, kwargs in ((Generator, G_TINY), (Discriminator, D_TINY)):
        with pytest.raises(UserError, match=r"aspect=\(4, 2\): must be \[rows, cols\], powers of two, one of them 1"):
            cls(**kwargs, aspect=(4, 2))
    assert aspect_problem([1, 128], 8) is None and aspect_problem([1, 128], 16) is not None  # 8 x 1024, 16 x 2048
    assert aspect_problem((4, 1), "x") is None  # an invalid resolution is its own problem: the smallest is assumed
    sg3 = StyleGAN3Generator(resolution=16, z_dim=8, w_dim=8, channel_base=64, channel_max=8, mapping_layers=1)
    path = signed(tmp_path / "sg3.safetensors", sg3, "generator", aspect=[1, 2])
    metadata = safetensors.safe_open(path, "pt").metadata() | {"architecture": "stylegan3"}
    tensors = sg3.state_dict()
    metadata["content_sha256"] = content_sha256(metadata, tensors)
    safetensors.torch.save_file(tensors, path, metadata=metadata)
    with pytest.raises(UserError, match="aspect: not an argument of StyleGAN3Generator"):
        load_snapshot(path)


def test_a_growing_network_runs_at_each_stage_in_the_aspect():
    torch.manual_seed(0)
    G = Generator(**{**G_TINY, "resolution": 16}, aspect=(1, 2), progressive=True, stage=[8, 1])
    D = Discriminator(**{**D_TINY, "resolution": 16}, aspect=(1, 2), progressive=True, stage=[8, 1])
    z, c = inputs()
    assert G.synthesis(G.mapping(z, c), full_size=False).shape == (2, 3, 8, 16)
    assert G(z, c).shape == (2, 3, 16, 32)  # the stage's image upsampled to the network's size
    reals, f = torch.randn(2, 3, 16, 32), fir_kernel()
    assert D(blended_reals(reals, 8, 1, f), c).shape == (2, 1)
    with pytest.raises(AssertionError, match=r"img: expected \[N, \*\(3, 8, 16\)\]"):
        D(reals, c)
    for network in (G, D):
        network.set_stage([16, 0.5])  # fading the top block in: D's previous entry reads the image downsampled
    assert G(z, c).shape == (2, 3, 16, 32) and D(blended_reals(reals, 16, 0.5, f), c).shape == (2, 1)
    # resized takes the short side to `resolution` in 2x FIR steps, whichever side is the long one
    assert torch.equal(resized(reals, 8, f), downsample2d(reals, f))
    assert torch.equal(resized(reals.transpose(2, 3), 4, f), downsample2d(downsample2d(reals.transpose(2, 3), f), f))
    assert torch.equal(resized(reals[..., :16, :16], 16, f), reals[..., :16, :16])


def test_attention_works_on_non_square_features():
    G, D = networks((2, 1), attention=[8])
    with torch.no_grad():
        G.synthesis.b8.attn.gain.fill_(1.0)
        D.b8.attn.gain.fill_(1.0)
        z, c = inputs()
        img = G(z, c)
        assert img.shape == (2, 3, 16, 8) and torch.isfinite(D(img, c)).all()


def test_cpu_kernels_are_chosen_by_the_real_number_of_pixels():
    # F(4x4, 3x3) pays from 256 channels and 16 x 16 pixels: an 8 x 32 layer qualifies where an 8 x 8 one does not
    arch = dict(resolution=8, channel_base=2048, channel_max=256, z_dim=8, w_dim=8, mapping_layers=1)
    with torch.device("meta"):
        G, D = Generator(**arch, aspect=(1, 4)), Discriminator(**arch, aspect=(4, 1))
        square = Generator(**arch)
    for net in (G, D, square):
        net.use_cpu_kernels()
    assert G.synthesis.b8.conv1.winograd and D.b8.conv0.winograd and not square.synthesis.b8.conv1.winograd
    x, w = torch.randn(2, 4, 8, 20), torch.randn(5, 4, 3, 3)  # the tiled convolution on a non-square map
    torch.testing.assert_close(winograd.conv3x3(x, w), F.conv2d(x, w, padding=1), rtol=1e-4, atol=1e-4)
