"""Training on non-square images (W x H, both powers of two) with StyleGAN2, in both orientations; the families that
take square images only refuse them by name."""

import numpy as np
import PIL.Image
import pytest
from click.testing import CliRunner
from train_helpers import tiny_args

from ganforge.cli import main
from ganforge.config import Config
from ganforge.data.build import BuildOptions, build
from ganforge.nets.configured import make_networks
from ganforge.snapshot import load_snapshot


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    """16 wide and 16 tall pictures of a bright bar, as 16x8 and 8x16 datasets."""
    root = tmp_path_factory.mktemp("nonsquare")
    rng = np.random.default_rng(0)
    out = {}
    for name, (width, height) in {"wide": (16, 8), "tall": (8, 16)}.items():
        src = root / name
        src.mkdir()
        for i in range(16):
            image = np.full((height * 2, width * 2), 60, np.uint8)
            x, y = rng.integers(0, width, 2)
            image[y % height : y % height + height // 2, x : x + width // 2] = 200
            image[-1, -1] = i  # every image distinct
            PIL.Image.fromarray(image).save(src / f"{i:02d}.png")
        build(src, root / f"{name}.zip", BuildOptions(resolution=(width, height), channels=1, workers=0))
        out[name] = (root / f"{name}.zip", (height, width))
    return out


@pytest.mark.parametrize("orientation", ["wide", "tall"])
def test_stylegan2_trains_and_samples_non_square_images(datasets, tmp_path, orientation):
    data, (height, width) = datasets[orientation]
    result = CliRunner().invoke(main, tiny_args(data, tmp_path / "runs", kimg=0.016, aug="fixed", aug_p=0.5))
    assert result.exit_code == 0, result.output
    (run,) = (tmp_path / "runs").iterdir()
    assert "non-square images" in (run / "log.txt").read_text()
    snapshot = sorted(run.glob("snapshots/*.safetensors"))[-1]
    G, _ = load_snapshot(snapshot)
    assert (G.resolution, tuple(G.image_size)) == (8, (height, width))
    _, D = make_networks(Config.from_json((run / "config.json").read_text()))
    assert tuple(D.aspect) == (height // 8, width // 8)
    for grid in ("reals.png", sorted(p.name for p in run.glob("fakes*.png"))[-1]):
        with PIL.Image.open(run / grid) as image:
            assert image.width % width == 0 and image.height % height == 0
            assert image.width // width >= 4  # whole images side by side
    # rerunning with a longer --kimg continues the run
    result = CliRunner().invoke(main, tiny_args(data, tmp_path / "runs", kimg=0.024, aug="fixed", aug_p=0.5))
    assert result.exit_code == 0 and "resuming at 0.016 kimg" in (run / "log.txt").read_text()


def test_square_only_families_refuse_non_square_data(datasets, tmp_path):
    data, _ = datasets["wide"]
    for extra, message in (
        ({"cfg": "tiny3"}, "--cfg tiny3: --data is 16x8, and only StyleGAN2"),
        ({"cfg": "tiny-r3gan"}, "--cfg tiny-r3gan: --data is 16x8, and only StyleGAN2"),
        ({"grow": True}, "--grow: --data is 16x8; progressive growing takes square images only"),
    ):
        args = tiny_args(data, tmp_path / "runs", kimg=0.016, **extra)  # a second --cfg overrides tiny_args' own
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output, result.output
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
