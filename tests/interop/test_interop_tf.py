"""TensorFlow-era NVlabs pickles (stylegan2 and stylegan2-ada in TensorFlow): files written to the published layout
import into networks that compute what TensorFlow computes with the same variables (a float64 numpy reference of
TF's graph), a ganforge network written in the TF layout imports back exactly, and nothing stored in the file runs."""

import math
import pickletools

import numpy as np
import pytest
import tf_fixtures as tfx
import tf_reference as ref
import torch

from ganforge.interop import import_network, load_network, read_network
from ganforge.interop.network import TENSORFLOW, file_kind
from ganforge.nets import Discriminator, Generator
from ganforge.snapshot import load_discriminator, load_snapshot

ARCH = dict(resolution=16, z_dim=8, w_dim=8, channel_base=64, channel_max=16, mapping_layers=2, c_dim=3)
ADA = dict(num_fp16_res=4, conv_clamp=256)  # what stylegan2-ada's train.py records for every configuration
G_KWARGS = dict(num_channels=3, resolution=16, label_size=3, latent_size=8, dlatent_size=8, fmap_base=32, fmap_max=16,
                mapping_layers=2)  # fmt: skip
D_KWARGS = dict(num_channels=3, resolution=16, label_size=0, fmap_base=32, fmap_max=16, mbstd_group_size=2)
OFFICIAL_GLOBALS = {"dnnlib.tflib.network Network", "numpy.core.multiarray _reconstruct", "numpy ndarray",
                    "numpy dtype", "numpy.core.multiarray scalar"}  # fmt: skip


def dyadic_weights(net: torch.nn.Module, seed: int) -> torch.nn.Module:
    """Random multiples of 1/64 in [-2, 2] in every tensor: x - 1 and x + 1 are exact in float32, so the style bias
    TF stores (less the 1 it adds at run time) converts back bit for bit."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for tensor in net.state_dict(keep_vars=True).values():
            tensor.copy_(torch.randint(-128, 129, tensor.shape, generator=generator) / 64)
    return net.eval()


@pytest.fixture(scope="module")
def nets():
    G = dyadic_weights(Generator(**ARCH, **ADA), seed=1)
    G_ema = dyadic_weights(Generator(**ARCH, **ADA), seed=2)
    D = dyadic_weights(Discriminator(**ARCH, **ADA, mbstd_group_size=2), seed=3)
    return G, G_ema, D


def write(tmp_path, G, D, Gs, name="network.pkl"):
    path = tmp_path / name
    path.write_bytes(tfx.tf_pickle(G, D, Gs))
    return path


def tf_generator(own, mapping, synthesis, kwargs, version=5):
    synthesis_net = tfx.network("G_synthesis", "G_synthesis", kwargs, synthesis, version=version)
    num_ws = 2 * int(math.log2(kwargs["resolution"])) - 2
    mapping_net = tfx.network(
        "G_mapping", "G_mapping", kwargs | {"dlatent_broadcast": num_ws}, mapping, version=version
    )
    return tfx.network("Gs", "G_main", kwargs, own, {"mapping": mapping_net, "synthesis": synthesis_net}, version)


def named_globals(data: bytes) -> set[str]:
    """Every global a protocol-3 pickle names (GLOBAL opcodes), read by pickletools."""
    return {arg for opcode, arg, _ in pickletools.genops(data) if opcode.name == "GLOBAL"}


def test_the_fixtures_follow_the_published_layout(nets):
    """Names and shapes as TF's build functions create them, for an 8 px network written out by hand, and for the
    16 px one as tf_reference derives them from TF's code; the pickle names only the official globals."""
    G = Generator(resolution=8, z_dim=8, w_dim=8, channel_base=64, channel_max=16, mapping_layers=2)
    own, mapping, synthesis = tfx.generator_variables(G)
    assert {k: v.shape for k, v in {**own, **mapping}.items()} == {
        "dlatent_avg": (8,), "Dense0/weight": (8, 8), "Dense0/bias": (8,), "Dense1/weight": (8, 8),
        "Dense1/bias": (8,)}  # fmt: skip
    layer = {"weight": None, "mod_weight": None, "mod_bias": None, "noise_strength": (), "bias": None}
    expected = {
        "noise0": (1, 1, 4, 4),
        "noise1": (1, 1, 8, 8),
        "noise2": (1, 1, 8, 8),
        "4x4/Const/const": (1, 16, 4, 4),
    }
    for scope, k, fmaps_in, fmaps_out in (("4x4/Conv", 3, 16, 16), ("4x4/ToRGB", 1, 16, 3), ("8x8/Conv0_up", 3, 16, 8),
                                          ("8x8/Conv1", 3, 8, 8), ("8x8/ToRGB", 1, 8, 3)):  # fmt: skip
        shapes = dict(weight=(k, k, fmaps_in, fmaps_out), mod_weight=(8, fmaps_in), mod_bias=(fmaps_in,),
                      noise_strength=(), bias=(fmaps_out,))  # fmt: skip
        expected |= {f"{scope}/{f}": shapes[f] for f in layer if f != "noise_strength" or "ToRGB" not in scope}
    assert {k: v.shape for k, v in synthesis.items()} == expected
    D = Discriminator(resolution=8, channel_base=64, channel_max=16)
    assert {k: v.shape for k, v in tfx.discriminator_variables(D).items()} == {
        "8x8/FromRGB/weight": (1, 1, 3, 8), "8x8/FromRGB/bias": (8,), "8x8/Conv0/weight": (3, 3, 8, 8),
        "8x8/Conv0/bias": (8,), "8x8/Conv1_down/weight": (3, 3, 8, 16), "8x8/Conv1_down/bias": (16,),
        "8x8/Skip/weight": (1, 1, 8, 16), "4x4/Conv/weight": (3, 3, 17, 16), "4x4/Conv/bias": (16,),
        "4x4/Dense0/weight": (256, 16), "4x4/Dense0/bias": (16,), "Output/weight": (16, 1),
        "Output/bias": (1,)}  # fmt: skip
    written = [{k: v.shape for k, v in part.items()} for part in tfx.generator_variables(nets[1])]
    assert written == [{k: tuple(v) for k, v in part.items()} for part in ref.generator_shapes(G_KWARGS)]
    D_ref = {k: tuple(v) for k, v in ref.discriminator_shapes(D_KWARGS).items()}
    assert {k: v.shape for k, v in tfx.discriminator_variables(Discriminator(**{**ARCH, "c_dim": 0})).items()} == D_ref
    data = tfx.tf_pickle(tfx.tf_generator(nets[0], "stylegan2"), tfx.tf_discriminator(nets[2]),
                         tfx.tf_generator(nets[1]), protocol=3)  # fmt: skip
    assert named_globals(data) == OFFICIAL_GLOBALS


@pytest.mark.parametrize(
    "conditional, layouts",
    [(False, {}), (True, {}), (False, dict(g="orig", d="orig")), (False, dict(g="resnet", d="skip"))],
)
def test_imported_networks_compute_what_tensorflow_computes(tmp_path, conditional, layouts):
    """Random TF variables (never a ganforge network), the networks imported from them, and TF's forward pass of
    the same variables in float64: the same images for every truncation, the same scores; for the default layouts
    (skip G, resnet D) and the others."""
    rng = np.random.default_rng(int(conditional))
    g_kwargs = G_KWARGS | {"label_size": 3 if conditional else 0}
    g_kwargs |= {"architecture": layouts["g"]} if layouts else {}
    own, mapping, synthesis = (ref.random_variables(shapes, rng) for shapes in ref.generator_shapes(g_kwargs))
    d_kwargs = D_KWARGS | (dict(label_size=3, mapping_layers=8, mapping_lrmul=0.01) if conditional else {})
    d_kwargs |= {"architecture": layouts["d"]} if layouts else {}
    d_vars = ref.random_variables(ref.discriminator_shapes(d_kwargs), rng)
    G = tf_generator(own, mapping, synthesis, g_kwargs)
    path = write(tmp_path, G, tfx.network("D", "D_main", d_kwargs, d_vars, version=5), G)
    z, c = rng.standard_normal((3, 8)), np.eye(3)[[0, 2, 1]]
    imported, meta = load_network(path)
    assert meta["source_format"] == TENSORFLOW and meta["details"]["c_dim"] == (3 if conditional else 0)
    assert imported.config["architecture"] == layouts.get("g", "skip")
    as_tensor = lambda a: torch.tensor(a, dtype=torch.float32)  # noqa: E731
    for psi, cutoff in ((1.0, None), (0.6, None), (0.5, 2)):
        expected = ref.tf_generate(own, mapping, synthesis, g_kwargs, z, c, psi, cutoff)
        with torch.no_grad():
            images = imported(as_tensor(z), as_tensor(c), psi=psi, cutoff=cutoff, noise_mode="const").double().numpy()
        assert np.abs(expected).max() > 0.5 and np.allclose(images, expected, rtol=1e-4, atol=1e-5), (psi, cutoff)
    D, _ = read_network(path, "D")
    assert D.config["architecture"] == layouts.get("d", "resnet")
    img, labels = rng.standard_normal((4, 3, 16, 16)), np.eye(3)[[0, 1, 2, 0]]
    expected = ref.tf_discriminate(d_vars, d_kwargs, img, labels)
    with torch.no_grad():
        scores = D(as_tensor(img), as_tensor(labels)).double().numpy()
    assert np.allclose(scores, expected, rtol=1e-4, atol=1e-5 * np.abs(expected).max()), (scores, expected)


@pytest.mark.parametrize(
    "layout, g_arch, d_arch",
    [
        ("stylegan2", "skip", "resnet"),
        ("ada", "skip", "resnet"),
        ("ada", "orig", "skip"),
        ("stylegan2", "resnet", "orig"),
    ],
)
def test_a_network_written_in_the_tf_layout_imports_back_exactly(nets, tmp_path, layout, g_arch, d_arch):
    G, G_ema, D = nets
    fp16 = ADA if layout == "ada" else {}  # the original release records no fp16 or clamping
    if (layout, g_arch, d_arch) != ("ada", "skip", "resnet"):
        G, G_ema = (dyadic_weights(Generator(**ARCH, **fp16, architecture=g_arch), seed) for seed in (1, 2))
        D = dyadic_weights(Discriminator(**ARCH, **fp16, mbstd_group_size=2, architecture=d_arch), seed=3)
    marker = tmp_path / "stored-source-was-run"
    source = f"import pathlib\npathlib.Path({str(marker)!r}).touch()\n"
    G_net, D_net = tfx.tf_generator(G, layout, "G", source=source), tfx.tf_discriminator(D, layout, source=source)
    path = write(tmp_path, G_net, D_net, tfx.tf_generator(G_ema, layout, source=source))
    assert file_kind(path) == TENSORFLOW
    z, c = torch.randn(4, 8, generator=torch.Generator().manual_seed(5)), torch.eye(3)[[0, 1, 2, 0]]
    for which, original in (("G_ema", G_ema), ("G", G)):
        loaded, meta = load_network(path, which=which)
        assert loaded.config == original.config and meta["network"] == which
        for name, value in original.state_dict().items():
            assert torch.equal(loaded.state_dict()[name], value), name
        for psi, cutoff in ((1, None), (0.7, 2)):
            assert torch.equal(loaded(z, c, psi=psi, cutoff=cutoff, noise_mode="const"),
                               original(z, c, psi=psi, cutoff=cutoff, noise_mode="const"))  # fmt: skip
    meta = import_network(path, tmp_path / "D.safetensors", which="D")
    imported, stored = load_discriminator(tmp_path / "D.safetensors")
    assert stored == meta and meta["source_format"] == TENSORFLOW and imported.config == D.config
    img = torch.randn(4, 3, 16, 16, generator=torch.Generator().manual_seed(6))
    assert torch.equal(imported(img, c), D(img, c))
    import_network(path, tmp_path / "G.safetensors")
    assert load_snapshot(tmp_path / "G.safetensors")[1]["imported_from"] == "network.pkl"
    assert not marker.exists()


@pytest.mark.parametrize("protocol", [3, 4])  # Python 3's pickles of bytes (TF's files are protocol 4)
def test_every_pickle_protocol_of_a_tf_file_is_told_apart_by_content(nets, tmp_path, protocol):
    G, G_ema, D = nets
    path = tmp_path / "model.pt"  # the name says nothing
    path.write_bytes(tfx.tf_pickle(tfx.tf_generator(G), tfx.tf_discriminator(D), tfx.tf_generator(G_ema), protocol))
    assert file_kind(path) == TENSORFLOW
    assert load_network(path)[0].config == G_ema.config


def test_settings_without_effect_on_the_images_are_accepted(nets, tmp_path):
    G, G_ema, D = nets
    kwargs = tfx.generator_kwargs(G, "ada") | dict(truncation_psi=0.5, truncation_cutoff=8, dlatent_avg_beta=0.995,
                                                   randomize_noise=True, fused_modconv=False, structure="fixed",
                                                   fmap_min=1, mapping_fmaps=8, label_fmaps=8)  # fmt: skip
    kwargs["fmap_base"] = np.int64(kwargs["fmap_base"])  # a numpy integer, as a script may pass one
    d_kwargs = tfx.discriminator_kwargs(D, "ada") | dict(freeze_layers=4, augment_strength=0.3, pagan_num=16)
    path = write(tmp_path, tfx.tf_generator(G), tfx.tf_discriminator(D, kwargs=d_kwargs),
                 tfx.tf_generator(G_ema, kwargs=kwargs))  # fmt: skip
    assert load_network(path)[0].config == G_ema.config
    assert read_network(path, "D")[0].config == D.config


def test_a_missing_mbstd_group_size_is_stylegan2s_default_of_4(tmp_path):
    D = dyadic_weights(Discriminator(**{**ARCH, "c_dim": 0}, mbstd_group_size=4), seed=4)
    kwargs = tfx.discriminator_kwargs(D, "stylegan2")
    del kwargs["mbstd_group_size"]  # stylegan2's run_training.py never records it
    G = dyadic_weights(Generator(**{**ARCH, "c_dim": 0}), seed=5)
    path = write(tmp_path, tfx.tf_generator(G, "stylegan2"), tfx.tf_discriminator(D, "stylegan2", kwargs),
                 tfx.tf_generator(G, "stylegan2"))  # fmt: skip
    assert read_network(path, "D")[0].config["mbstd_group_size"] == 4
