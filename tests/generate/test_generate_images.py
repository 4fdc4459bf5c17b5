"""One PNG per seed: the pixels of load_snapshot's generator, byte-identical across runs and batch sizes, with noise
that is the network's constant, none, or drawn from each image's own seed."""

import numpy as np
import pytest
from generate_helpers import by_hand, options, read_png, tiny_snapshot

from ganforge.generate import generate


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory):
    folder = tmp_path_factory.mktemp("snapshots")
    rgb = tiny_snapshot(folder / "rgb.safetensors", c_dim=3)
    return {"rgb": rgb, "grey": tiny_snapshot(folder / "grey.safetensors", img_channels=1)}


def pngs(outdir, seeds):
    return np.stack([read_png(outdir / f"seed{s:07d}.png") for s in seeds])


def test_pngs_are_the_snapshot_generator_images(snapshots, tmp_path):
    seeds = (0, 1, 2, 3, 123456)
    summary = generate(
        options(snapshots["rgb"], tmp_path, seeds=seeds, class_index=1, trunc=0.7, trunc_cutoff=2, batch=2)
    )
    assert summary["written"] == [f"seed{s:07d}.png" for s in seeds] and summary["images"] == 5
    assert summary["images_per_second"] > 0 and summary["device"] == "cpu"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(summary["written"])  # no temporary files left
    expected = by_hand(snapshots["rgb"], seeds, class_index=1, psi=0.7, cutoff=2)
    assert np.array_equal(pngs(tmp_path, seeds), expected)
    untruncated = by_hand(snapshots["rgb"], seeds, class_index=1)
    assert not np.array_equal(expected, untruncated)


def test_same_options_give_byte_identical_files_whatever_the_batch(snapshots, tmp_path):
    seeds = (5, 6, 7, 8, 9)
    for noise_mode in ("const", "random"):
        for batch in (1, 2, 5):
            outdir = tmp_path / f"{noise_mode}{batch}"
            generate(options(snapshots["grey"], outdir, seeds=seeds, noise_mode=noise_mode, batch=batch))
        first = [(tmp_path / f"{noise_mode}1" / f"seed{s:07d}.png").read_bytes() for s in seeds]
        for batch in (2, 5):
            assert [(tmp_path / f"{noise_mode}{batch}" / f"seed{s:07d}.png").read_bytes() for s in seeds] == first


def test_noise_modes(snapshots, tmp_path):
    seeds = (4, 5)
    for mode in ("const", "none", "random"):
        generate(options(snapshots["grey"], tmp_path / mode, seeds=seeds, noise_mode=mode))
    for mode in ("const", "none"):
        assert np.array_equal(pngs(tmp_path / mode, seeds), by_hand(snapshots["grey"], seeds, noise_mode=mode))
    random = pngs(tmp_path / "random", seeds)
    assert not np.array_equal(random, pngs(tmp_path / "const", seeds))
    assert not np.array_equal(random, pngs(tmp_path / "none", seeds))
    generate(options(snapshots["grey"], tmp_path / "alone", seeds=(5,), noise_mode="random"))
    assert np.array_equal(pngs(tmp_path / "alone", (5,)), random[1:])  # seed 5's noise does not depend on seed 4
