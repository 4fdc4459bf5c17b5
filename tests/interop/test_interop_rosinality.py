"""rosinality checkpoints: imported networks compute what rosinality's model computes (checked against an independent
re-statement of it), the architecture is inferred from the tensors and checked, and foreign files are named."""

import argparse

import pytest
import rosinality_reference as ref
import torch

from ganforge.errors import UserError
from ganforge.interop import import_network, load_network
from ganforge.interop.rosinality import W_AVG_SAMPLES, W_AVG_SEED
from ganforge.snapshot import load_discriminator

SIZE, STYLE_DIM, N_MLP = 16, 8, 2
CHANNELS = {4: 16, 8: 16, 16: 8}  # min(128 / r, 16), as rosinality's table is min(16384 m / r, 512)
close = dict(rtol=1e-4, atol=1e-4)


@pytest.fixture(scope="module")
def checkpoint():
    return {
        "g_ema": ref.generator_state(SIZE, STYLE_DIM, N_MLP, CHANNELS, seed=1),
        "g": ref.generator_state(SIZE, STYLE_DIM, N_MLP, CHANNELS, seed=2),
        "d": ref.discriminator_state(SIZE, CHANNELS, seed=3),
        "latent_avg": torch.randn(STYLE_DIM),
        "args": argparse.Namespace(size=SIZE, n_mlp=N_MLP),  # rosinality's train.py stores its arguments
        "ada_aug_p": 0.2,
    }


def save(tmp_path, checkpoint, zip_format=True):
    path = tmp_path / "checkpoint.pt"
    torch.save(checkpoint, path, _use_new_zipfile_serialization=zip_format)
    return path


@pytest.mark.parametrize("zip_format", [True, False])
def test_imported_generator_computes_what_rosinality_computes(checkpoint, tmp_path, zip_format):
    G, meta = load_network(save(tmp_path, checkpoint, zip_format))
    assert meta["details"] == {"size": SIZE, "style_dim": STYLE_DIM, "n_mlp": N_MLP, "w_avg": "latent_avg"}
    assert G.config["channel_base"] == 128 and G.config["channel_max"] == 16
    sd = checkpoint["g_ema"]
    count = sum(v.numel() for k, v in sd.items() if not k.endswith("kernel") and not k.startswith("noises"))
    assert sum(p.numel() for p in G.parameters()) == count
    z = torch.randn(3, STYLE_DIM, generator=torch.Generator().manual_seed(4))
    torch.testing.assert_close(G.mapping(z, None)[:, 0], ref.mapping(sd, z, N_MLP), **close)
    ws = torch.randn(3, G.num_ws, STYLE_DIM, generator=torch.Generator().manual_seed(5))  # a different w per layer
    torch.testing.assert_close(G.synthesis(ws, noise_mode="const"), ref.synthesis(sd, ws, SIZE), **close)
    w = checkpoint["latent_avg"] + 0.6 * (ref.mapping(sd, z, N_MLP) - checkpoint["latent_avg"])  # rosinality truncation
    expected = ref.synthesis(sd, w.unsqueeze(1).repeat(1, G.num_ws, 1), SIZE)
    torch.testing.assert_close(G(z, None, psi=0.6, noise_mode="const"), expected, **close)


def test_w_avg_is_estimated_when_the_checkpoint_has_none(checkpoint, tmp_path):
    path = save(tmp_path, {k: v for k, v in checkpoint.items() if k != "latent_avg"})
    for which in ("G_ema", "G"):
        G, meta = load_network(path, which=which)
        assert meta["details"]["w_avg"].startswith(f"mean w of {W_AVG_SAMPLES} latents")
        z = torch.randn([W_AVG_SAMPLES, STYLE_DIM], generator=torch.Generator().manual_seed(W_AVG_SEED))
        expected = ref.mapping(checkpoint[which.lower()], z, N_MLP).mean(dim=0)
        torch.testing.assert_close(G.mapping.w_avg, expected, **close)


def test_imported_discriminator_scores_like_rosinality(checkpoint, tmp_path):
    import_network(save(tmp_path, checkpoint), tmp_path / "D.safetensors", which="D")
    D, meta = load_discriminator(tmp_path / "D.safetensors")
    assert meta["details"] == {"size": SIZE} and D.config["mbstd_group_size"] == 4
    img = torch.randn(8, 3, SIZE, SIZE, generator=torch.Generator().manual_seed(6))
    torch.testing.assert_close(D(img, None), ref.discriminator(checkpoint["d"], img, SIZE), **close)


def test_channels_ganforge_cannot_express_are_refused(tmp_path):
    sd = ref.generator_state(SIZE, STYLE_DIM, N_MLP, {4: 8, 8: 16, 16: 8}, seed=1)  # widest in the middle
    match = r"mismatch, tensor synthesis.b8.conv0.weight has shape \[1, 16, 8, 3, 3\], the architecture needs \[8, 8"
    with pytest.raises(UserError, match=match):
        load_network(save(tmp_path, {"g_ema": sd}))


def test_foreign_tensors_and_checkpoints_are_named(checkpoint, tmp_path):
    g_ema = dict(checkpoint["g_ema"], **{"extra.weight": torch.zeros(1)})
    with pytest.raises(UserError, match="tensor extra.weight is not part of a rosinality StyleGAN2 network"):
        load_network(save(tmp_path, {"g_ema": g_ema}))
    g_ema = dict(checkpoint["g_ema"], **{"convs.0.conv.blur.kernel": torch.ones(4, 4)})
    with pytest.raises(UserError, match=r"convs.0.conv.blur.kernel is not the \[1, 3, 3, 1\] FIR filter"):
        load_network(save(tmp_path, {"g_ema": g_ema}))
    with pytest.raises(UserError, match="no G_ema .g_ema. in this checkpoint; it holds D"):
        load_network(save(tmp_path, {"d": checkpoint["d"]}))
    with pytest.raises(UserError, match="not a rosinality stylegan2-pytorch one .no g_ema, g or d; it holds model"):
        load_network(save(tmp_path, {"model": {"w": torch.zeros(1)}}))
    path = tmp_path / "checkpoint.pt"
    path.write_bytes(b"PK\x03\x04 a zip archive, but not one torch wrote")
    with pytest.raises(UserError, match="not a readable PyTorch checkpoint"):
        load_network(path)
