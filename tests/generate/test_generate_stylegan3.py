"""`ganforge generate --translate/--rotate`: a StyleGAN3 snapshot's images move through its input transform, the
StyleGAN3 demonstration of equivariance; StyleGAN2 networks and malformed values are user errors."""

import math

import numpy as np
import PIL.Image
import pytest
import torch
from click.testing import CliRunner
from generate_helpers import tiny_snapshot

from ganforge.cli import main
from ganforge.data.loader import to_uint8
from ganforge.nets import StyleGAN3Generator, input_transform
from ganforge.snapshot import load_snapshot, save_snapshot

SG3_ARCH = dict(resolution=16, z_dim=8, w_dim=8, channel_base=128, channel_max=16, num_layers=4)


@pytest.fixture(scope="module")
def sg3(tmp_path_factory):
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("sg3") / "g3.safetensors"
    save_snapshot(path, StyleGAN3Generator(**SG3_ARCH), {})
    return path


def _generate(network, outdir, *extra):
    return CliRunner().invoke(main, ["generate", "--network", str(network), "--outdir", str(outdir), "--seeds", "0-1",
                                     "--device", "cpu", *extra])  # fmt: skip


def _by_hand(network, seeds, transform) -> np.ndarray:
    G, _ = load_snapshot(network)
    z = torch.from_numpy(np.stack([np.random.RandomState(s).randn(G.z_dim) for s in seeds])).float()
    with torch.no_grad():
        images = G.synthesis(G.mapping(z, torch.zeros([len(seeds), 0])), transform=transform)
    return to_uint8(images).permute(0, 2, 3, 1).numpy()


def _read(outdir, seeds) -> np.ndarray:
    return np.stack([np.asarray(PIL.Image.open(outdir / f"seed{s:07d}.png")) for s in seeds])


def test_translate_and_rotate_move_the_image_through_the_input_transform(sg3, tmp_path):
    result = _generate(sg3, tmp_path / "moved", "--translate", "0.25,-0.125", "--rotate", "30")
    assert result.exit_code == 0, result.output
    moved = _read(tmp_path / "moved", [0, 1])
    expected = _by_hand(sg3, [0, 1], input_transform((0.25, -0.125), math.radians(30)))
    np.testing.assert_array_equal(moved, expected)
    assert _generate(sg3, tmp_path / "still").exit_code == 0
    assert np.abs(_read(tmp_path / "still", [0, 1]).astype(int) - moved).max() > 16


def test_a_quarter_width_shift_moves_the_pixels_by_a_quarter_width(sg3, tmp_path):
    """The alias-free generator is translation-equivariant: the 4-pixel shift of a 16-pixel image equals the image
    shifted by 4 pixels, up to the interpolation error near the border that the input margin leaves."""
    assert _generate(sg3, tmp_path / "a").exit_code == 0
    assert _generate(sg3, tmp_path / "b", "--translate", "0.25,0").exit_code == 0
    still, moved = (_read(tmp_path / name, [0]).astype(float)[0] for name in ("a", "b"))
    inside = np.abs(moved[4:12, 8:12] - still[4:12, 4:8])
    across = np.abs(moved[4:12, 8:12] - still[4:12, 8:12])
    assert inside.mean() < across.mean() / 3, (inside.mean(), across.mean())


def test_stylegan2_networks_and_malformed_values_are_refused(sg3, tmp_path):
    sg2 = tiny_snapshot(tmp_path / "g2.safetensors")
    result = _generate(sg2, tmp_path / "out", "--rotate", "10")
    assert result.exit_code == 2 and "--translate/--rotate" in result.output and "StyleGAN2" in result.output
    for text in ("0.5", "1,2,3", "a,b", "nan,0"):
        result = _generate(sg3, tmp_path / "out", "--translate", text)
        assert result.exit_code == 2 and f"--translate {text}: write X,Y" in result.output, result.output
