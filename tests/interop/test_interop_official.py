"""NVlabs pickles: a file with the official object graph imports into networks that compute what the original ones
compute (same z, class, truncation, constant noise), for both kwargs layouts and pickle protocols 3 and 4, without
running the source stored in the file; unsupported settings and networks are listed in one error."""

import pickle

import pytest
import torch
from interop_fixtures import (
    EasyDict,
    Persistent,
    discriminator_kwargs,
    generator_kwargs,
    module_source,
    network_pickle,
    persistent_tree,
    random_weights,
)

from ganforge.errors import UserError
from ganforge.interop import import_network, load_network
from ganforge.nets import Discriminator, Generator
from ganforge.nets.layers import fir_kernel
from ganforge.snapshot import load_discriminator, load_snapshot

ARCH = dict(resolution=16, z_dim=8, w_dim=8, channel_base=64, channel_max=8, mapping_layers=2, c_dim=3, conv_clamp=256)


@pytest.fixture(scope="module")
def nets():
    G = random_weights(Generator(**ARCH), seed=1)
    G_ema = random_weights(Generator(**ARCH), seed=2)
    D = random_weights(Discriminator(**{**ARCH, "mapping_layers": 2}, mbstd_group_size=2), seed=3)
    return G, G_ema, D


def write(tmp_path, networks: dict, protocol: int = 4):
    path = tmp_path / "network.pkl"
    path.write_bytes(network_pickle(networks, protocol))
    return path


def all_three(nets, layout="ada", source=""):
    G, G_ema, D = nets
    return {"G": persistent_tree(G, generator_kwargs(G, layout), source),
            "G_ema": persistent_tree(G_ema, generator_kwargs(G_ema, layout), source),
            "D": persistent_tree(D, discriminator_kwargs(D), source)}  # fmt: skip


def count(net):
    return sum(p.numel() for p in net.parameters())


@pytest.mark.parametrize(("layout", "protocol"), [("ada", 3), ("stylegan3", 4)])
def test_imported_generators_make_the_original_images(nets, tmp_path, layout, protocol):
    marker = tmp_path / "stored-source-was-run"
    path = write(tmp_path, all_three(nets, layout, module_source(marker)), protocol)
    z = torch.randn(4, 8, generator=torch.Generator().manual_seed(5))
    c = torch.eye(3)[[0, 1, 2, 0]]
    for which, original in (("G_ema", nets[1]), ("G", nets[0])):
        loaded, meta = load_network(path, which=which)
        assert loaded.config == original.config and count(loaded) == count(original)
        assert meta["source_format"] == "NVlabs pickle" and meta["network"] == which
        for psi, cutoff in ((1, None), (0.7, None), (0.5, 2)):
            expected = original(z, c, psi=psi, cutoff=cutoff, noise_mode="const")
            assert torch.equal(loaded(z, c, psi=psi, cutoff=cutoff, noise_mode="const"), expected)
    assert not marker.exists()


def test_imported_discriminator_scores_like_the_original(nets, tmp_path):
    path = write(tmp_path, all_three(nets))
    meta = import_network(path, tmp_path / "D.safetensors", which="D")
    D, stored = load_discriminator(tmp_path / "D.safetensors")
    assert stored == meta and D.config == nets[2].config and count(D) == count(nets[2])
    img, c = torch.randn(4, 3, 16, 16), torch.eye(3)[[2, 1, 0, 1]]
    assert torch.equal(D(img, c), nets[2](img, c))


def test_import_writes_a_snapshot_of_g_ema(nets, tmp_path):
    path = write(tmp_path, all_three(nets))
    import_network(path, tmp_path / "out" / "G.safetensors")
    G, meta = load_snapshot(tmp_path / "out" / "G.safetensors")
    assert meta["imported_from"] == "network.pkl" and len(meta["source_sha256"]) == 64
    for name, value in nets[1].state_dict().items():
        assert torch.equal(G.state_dict()[name], value), name


def test_settings_without_effect_on_the_images_are_accepted(nets, tmp_path):
    G, _, D = nets
    kwargs = generator_kwargs(G, fp16_channels_last=True)
    kwargs["mapping_kwargs"]["w_avg_beta"] = 0.998
    d_kwargs = discriminator_kwargs(D)
    d_kwargs["block_kwargs"].update(freeze_layers=4, fp16_channels_last=True)
    path = write(tmp_path, {"G_ema": persistent_tree(G, kwargs), "D": persistent_tree(D, d_kwargs)})
    assert load_network(path)[0].config == G.config
    import_network(path, tmp_path / "D.safetensors", which="D")
    unconditional = Discriminator(resolution=8, channel_base=32, channel_max=4)
    d_kwargs = discriminator_kwargs(unconditional, mapping_kwargs=EasyDict(num_layers=0, lr_multiplier=0.1))
    path = write(tmp_path, {"D": persistent_tree(unconditional, d_kwargs)})  # as legacy.py converts TF networks
    import_network(path, tmp_path / "D.safetensors", which="D")


def test_unsupported_generator_settings_are_listed_together(nets, tmp_path):
    G = nets[0]
    kwargs = generator_kwargs(G, resample_filter=[1, 2, 1], magnitude_ema_beta=0.9)
    kwargs["synthesis_kwargs"]["architecture"] = "progressive"
    kwargs["mapping_kwargs"]["lr_multiplier"] = 0.1
    del kwargs["z_dim"]
    with pytest.raises(UserError) as err:
        load_network(write(tmp_path, {"G_ema": persistent_tree(G, kwargs)}))
    text = "\n".join(err.value.problems)
    assert len(err.value.problems) == 5, text
    assert "argument z_dim is missing" in text and "synthesis_kwargs.architecture='progressive'" in text
    assert "resample_filter=[1, 2, 1]" in text and "magnitude_ema_beta=0.9" in text
    assert "mapping_kwargs.lr_multiplier=0.1: ganforge implements only 0.01" in text


def test_unsupported_discriminator_settings_are_listed_together(nets, tmp_path):
    D = nets[2]
    kwargs = discriminator_kwargs(D, architecture="densenet")
    kwargs["epilogue_kwargs"] = EasyDict(mbstd_group_size=None, mbstd_num_channels=2)
    with pytest.raises(UserError) as err:
        import_network(write(tmp_path, {"D": persistent_tree(D, kwargs)}), tmp_path / "D.safetensors", which="D")
    text = "\n".join(err.value.problems)
    assert "architecture='densenet'" in text and "mbstd_num_channels=2" in text and "mbstd_group_size=None" in text


@pytest.mark.parametrize(("g_arch", "d_arch"), [("orig", "orig"), ("resnet", "skip")])
def test_every_official_architecture_imports_and_computes_like_the_original(g_arch, d_arch, tmp_path):
    """The official cifar configuration's plain D, and the G and D architectures config F does not use: the file's
    tensors (a toRGB per block or the last only, 1x1 skips, fromRGB per block) build the same network."""
    torch.manual_seed(0)
    arch = dict(resolution=16, channel_base=64, channel_max=8, c_dim=0)
    G = Generator(**arch, z_dim=8, w_dim=8, mapping_layers=2, architecture=g_arch)
    D = Discriminator(**arch, mbstd_group_size=2, architecture=d_arch)
    path = write(tmp_path, {"G_ema": persistent_tree(G, generator_kwargs(G)),
                            "D": persistent_tree(D, discriminator_kwargs(D))})  # fmt: skip
    loaded, _ = load_network(path)
    z, c, img = torch.randn(2, 8), torch.zeros(2, 0), torch.randn(2, 3, 16, 16)
    assert loaded.config["architecture"] == g_arch and torch.equal(loaded(z, c, noise_mode="const"),
                                                                   G(z, c, noise_mode="const"))  # fmt: skip
    import_network(path, tmp_path / "D.safetensors", which="D")
    loaded_d, _ = load_discriminator(tmp_path / "D.safetensors")
    assert loaded_d.config["architecture"] == d_arch and torch.equal(loaded_d(img, c), D(img, c))


def test_a_generator_neither_stylegan2_nor_stylegan3_is_refused(tmp_path):
    empty = {"_parameters": {}, "_buffers": {}, "_modules": {}}
    synthesis = Persistent("SynthesisNetwork", {**empty, "_modules": {"head": Persistent("Conv2dLayer", empty)}})
    record = Persistent("Generator", {**empty, "_modules": {"synthesis": synthesis}, "_init_kwargs": {}})
    with pytest.raises(UserError, match="neither StyleGAN2's .* nor StyleGAN3's"):
        load_network(write(tmp_path, {"G_ema": record}))


def test_tensor_problems_are_listed_together(nets, tmp_path):
    G = nets[0]
    tree = persistent_tree(G, generator_kwargs(G))
    b16 = tree.state["_modules"]["synthesis"].state["_modules"]["b16"]
    del b16.state["_modules"]["torgb"].state["_parameters"]["bias"]
    b16.state["_buffers"]["resample_filter"] = torch.ones(4, 4) / 16
    with pytest.raises(UserError, match=r"synthesis.b16.resample_filter is not the \[1, 3, 3, 1\] FIR filter"):
        load_network(write(tmp_path, {"G_ema": tree}))
    b16.state["_buffers"]["resample_filter"] = fir_kernel()
    b16.state["_modules"]["conv1"].state["_parameters"]["weight"] = torch.zeros(4, 4, 1, 1)
    with pytest.raises(UserError) as err:
        load_network(write(tmp_path, {"G_ema": tree}))
    assert err.value.problems == [
        f"{tmp_path / 'network.pkl'}: architecture mismatch, missing tensor synthesis.b16.torgb.bias",
        f"{tmp_path / 'network.pkl'}: architecture mismatch, tensor synthesis.b16.conv1.weight has shape [4, 4, 1, 1], "
        "the architecture needs [4, 4, 3, 3]",
    ]


def test_missing_network_and_foreign_pickles(nets, tmp_path):
    G = nets[0]
    path = write(tmp_path, {"G_ema": persistent_tree(G, generator_kwargs(G))})
    with pytest.raises(UserError, match="no G network in this pickle; it holds G_ema"):
        load_network(path, which="G")
    with pytest.raises(UserError, match="no D network in this pickle; it holds G_ema"):
        import_network(path, tmp_path / "D.safetensors", which="D")
    path.write_bytes(pickle.dumps({"weights": [1.0, 2.0]}))
    with pytest.raises(UserError, match="not an NVlabs network pickle"):
        load_network(path)
    path.write_bytes(pickle.dumps([1, 2, 3]))
    with pytest.raises(UserError, match="not an NVlabs network pickle"):
        load_network(path)
    path.write_bytes(network_pickle({"G_ema": persistent_tree(nets[2], discriminator_kwargs(nets[2]))}))
    with pytest.raises(UserError, match="the network is a Discriminator, not a StyleGAN2 Generator"):
        load_network(path)
