"""`ganforge.load` and its Network: the same pixels and latents as the commands for the same options, and bad
arguments refused by name."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner
from PIL import Image

import ganforge
from ganforge.cli import main
from ganforge.errors import UserError

sys.path.insert(0, str(Path(__file__).parent / "generate"))
from generate_helpers import tiny_snapshot  # noqa: E402

FIXTURES = Path(__file__).parent / "interop" / "fixtures"


@pytest.fixture(scope="module")
def conditional(tmp_path_factory) -> Path:
    return tiny_snapshot(tmp_path_factory.mktemp("api") / "G.safetensors", c_dim=3)


def _generated(tmp_path, network, *args) -> np.ndarray:
    outdir = tmp_path / "cli"
    result = CliRunner().invoke(main, ["generate", "--network", str(network), "--outdir", str(outdir), *args])
    assert result.exit_code == 0, result.output
    return np.stack([np.asarray(Image.open(p)) for p in sorted(outdir.glob("seed*.png"))])


@pytest.mark.parametrize("noise", ["const", "random"])
def test_images_are_the_pixels_generate_writes(conditional, tmp_path, noise):
    G = ganforge.load(conditional)
    made = G.images(seeds=[3, 1, 4], psi=0.6, label=2, noise=noise)
    cli = _generated(tmp_path, conditional, "--seeds", "1,3,4", "--trunc", "0.6", "--class", "2", "--noise-mode", noise)
    assert made.dtype == np.uint8 and made.shape == (3, 16, 16, 3)
    assert np.array_equal(made[[1, 0, 2]], cli)  # the files sort by seed
    vector = G.images(seeds=[3], psi=0.6, label=[0.0, 0.0, 1.0], noise=noise)
    assert np.array_equal(vector, made[:1])  # a one-hot vector is its class


def test_w_then_synthesize_is_images_and_a_walk_passes_through_its_ends(conditional):
    G = ganforge.load(conditional)
    ws = G.w(seeds=[5, 6], psi=0.8, label=0)
    assert ws.shape == (2, G.module.num_ws, G.module.w_dim)
    assert np.array_equal(G.synthesize(ws), G.images(seeds=[5, 6], psi=0.8, label=0))
    steps = torch.linspace(0, 1, 5)[:, None, None]
    walk = G.synthesize(ws[:1] + steps * (ws[1:] - ws[:1]))
    assert walk.shape[0] == 5 and not np.array_equal(walk[1], walk[0])
    assert np.array_equal(walk[[0, 4]], G.synthesize(ws))


@pytest.mark.parametrize("config", ["t", "r"])
def test_an_official_stylegan3_pickle_moves_as_nvlabs_code_moves_it(config):
    G = ganforge.load(FIXTURES / f"stylegan3-{config}.pkl")
    official = np.load(FIXTURES / f"stylegan3-{config}-official-images.npz")
    moved = G.images(seeds=range(3), psi=0.7, translate=(0.3, -0.2), rotate=45)
    assert np.abs(moved.astype(int) - official["moved"].astype(int)).max() <= 1


def test_project_finds_the_latent_the_command_finds(conditional, tmp_path):
    G = ganforge.load(conditional)
    target = G.images(seeds=[9], label=1)[0]
    Image.fromarray(target).save(tmp_path / "target.png")
    ws = G.project(target, steps=4, perceptual="none", label=1)
    args = ["project", "--network", str(conditional), "--target", str(tmp_path / "target.png"), "--outdir",
            str(tmp_path / "proj"), "--steps", "4", "--perceptual", "none", "--class", "1"]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    (saved,) = (tmp_path / "proj").glob("*/projected_w.npz")
    assert torch.equal(ws, torch.from_numpy(np.load(saved)["w"]))
    assert torch.equal(G.project(tmp_path / "target.png", steps=4, perceptual="none", label=1), ws)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda G: G.images(seeds=[-1], label=0), "seeds: give whole numbers from 0 to 4294967295 (-1 is not one)"),
        (lambda G: G.images(seeds=[0], psi=math.nan, label=0), "psi=nan: give a finite number"),
        (lambda G: G.images(seeds=[0]), "this network is conditional"),
        (lambda G: G.images(seeds=[0], label=3), "this network has classes 0 to 2"),
        (lambda G: G.images(seeds=[0], label=[1.0, 0.0]), "2 number(s), this network takes label vectors of 3"),
        (lambda G: G.images(seeds=[0], label=-1), "label=-1: a class index is >= 0"),
        (lambda G: G.images(seeds=[0], label=0, noise="loud"), "noise='loud': choose one of const, random, none"),
        (lambda G: G.images(seeds=[0], label=0, rotate=10), "translate and rotate move StyleGAN3 networks only"),
        (lambda G: G.synthesize(G.w([0], label=0), noise="random"), "synthesize takes const or none"),
        (lambda G: G.project(np.zeros((16, 16, 3), np.uint8), steps=0, label=0), "steps=0: give a whole number"),
    ],
)
def test_bad_arguments_are_refused_by_name(conditional, call, message):
    with pytest.raises(UserError) as refused:
        call(ganforge.load(conditional))
    assert message in "\n".join(refused.value.problems)


def test_to_moves_the_network_and_returns_it(conditional):
    G = ganforge.load(conditional)
    assert G.to("cpu") is G and G.device == torch.device("cpu")
    assert ganforge.load.__module__ == "ganforge.api"
