"""`ganforge generate` with a non-square StyleGAN2 (aspect (rows, cols)): images, grids, style-mixing tables and
interpolations (Pillow and mp4) are as wide and tall as the network's images, both orientations; --size sets the short
side and keeps the aspect; the memory estimate counts W x H."""

import importlib.util

import numpy as np
import pytest
from generate_helpers import by_hand, options, read_png, tiny_snapshot

from ganforge.generate import GenerateOptions, generate
from ganforge.generate.needs import needs_of
from ganforge.generate.sizes import describe, shown_size
from ganforge.metrics.shapes import image_size
from ganforge.nets import StyleGAN3Generator
from ganforge.nets.noise import noise_buffer_names
from ganforge.projected import read_projected, write_projected_w
from ganforge.snapshot import load_snapshot

# resolution 8: (1, 2) makes 16 wide x 8 tall images, (2, 1) 8 wide x 16 tall
SHAPES = {(1, 2): (8, 16), (2, 1): (16, 8)}  # aspect -> (H, W)


@pytest.fixture(scope="module")
def snapshots(tmp_path_factory):
    """{aspect: snapshot} of tiny non-square generators."""
    folder = tmp_path_factory.mktemp("snapshots")
    return {aspect: tiny_snapshot(folder / f"G{aspect[0]}x{aspect[1]}.safetensors", resolution=8, aspect=aspect)
            for aspect in SHAPES}  # fmt: skip


@pytest.fixture(params=list(SHAPES), ids=["wide", "tall"])
def network(request, snapshots):
    """(snapshot, (H, W)) of a tiny non-square generator, each orientation."""
    return snapshots[request.param], SHAPES[request.param]


def cell(image: np.ndarray, row: int, col: int, size) -> np.ndarray:
    h, w = size
    return image[row * h : (row + 1) * h, col * w : (col + 1) * w]


def test_images_and_a_grid_have_the_networks_width_and_height(network, tmp_path):
    snapshot, (h, w) = network
    seeds = (0, 1, 2, 3, 4, 5)
    generate(options(snapshot, tmp_path / "images", seeds=seeds))
    expected = by_hand(snapshot, seeds)
    assert expected.shape == (6, h, w, 3)
    for seed, image in zip(seeds, expected, strict=True):
        assert np.array_equal(read_png(tmp_path / "images" / f"seed{seed:07d}.png"), image)
    generate(options(snapshot, tmp_path / "grid", seeds=seeds, grid=(2, 3)))
    grid = read_png(tmp_path / "grid" / "grid.png")
    assert grid.shape == (2 * h, 3 * w, 3)
    for i in range(6):
        assert np.array_equal(cell(grid, i // 3, i % 3, (h, w)), expected[i])
    # --size is the short side: 16 -> 16 x 32 or 32 x 16, each pixel a 2 x 2 block with nearest neighbour
    generate(options(snapshot, tmp_path / "big", seeds=seeds, grid=(3, 2), size=16, resize="nearest"))
    big = read_png(tmp_path / "big" / "grid.png")
    assert big.shape == (3 * 2 * h, 2 * 2 * w, 3)
    for i in range(6):
        doubled = expected[i].repeat(2, axis=0).repeat(2, axis=1)
        assert np.array_equal(cell(big, i // 2, i % 2, (2 * h, 2 * w)), doubled)


def test_a_style_mixing_table_and_its_cells(network, tmp_path):
    snapshot, (h, w) = network
    rows, cols = (1, 2), (3, 4, 5)
    summary = generate(options(snapshot, tmp_path, style_mix=(rows, cols), mix_cells=True, batch=4))
    table = read_png(tmp_path / "stylemix.png")
    assert table.shape == (3 * h, 4 * w, 3) and not cell(table, 0, 0, (h, w)).any()
    top, left = by_hand(snapshot, cols, batch=4), by_hand(snapshot, rows, batch=4)
    assert all(np.array_equal(cell(table, 0, c + 1, (h, w)), top[c]) for c in range(3))
    assert all(np.array_equal(cell(table, r + 1, 0, (h, w)), left[r]) for r in range(2))
    assert len(summary["written"]) == 1 + 6
    for r, c in ((0, 0), (1, 2)):
        own = read_png(tmp_path / f"mix{rows[r]:07d}-{cols[c]:07d}.png")
        assert own.shape == (h, w, 3) and np.array_equal(own, cell(table, r + 1, c + 1, (h, w)))


def test_an_interpolation_through_pillow_has_frames_of_the_networks_shape(snapshots, tmp_path):
    import PIL.Image

    snapshot, (h, w) = snapshots[2, 1], SHAPES[2, 1]  # the mp4 test below takes the other orientation
    generate(options(snapshot, tmp_path, seeds=(0, 1, 2, 3), grid=(1, 2), interp=2, interp_format="webp", batch=1))
    with PIL.Image.open(tmp_path / "interp.webp") as animation:
        assert animation.size == (2 * w, h) and animation.n_frames == 4
        first = np.asarray(animation.convert("RGB"))
    keys = by_hand(snapshot, (0, 2), batch=1)  # each cell's loop starts at its first seed
    assert np.array_equal(cell(first, 0, 0, (h, w)), keys[0]) and np.array_equal(cell(first, 0, 1, (h, w)), keys[1])


@pytest.mark.skipif(importlib.util.find_spec("imageio_ffmpeg") is None, reason="the video extra is not installed")
def test_an_mp4_of_a_non_square_network_at_a_size(snapshots, tmp_path):
    import imageio_ffmpeg

    snapshot, (h, w) = snapshots[1, 2], SHAPES[1, 2]
    generate(options(snapshot, tmp_path, seeds=(0, 1), interp=2, size=12, fps=10))
    reader = imageio_ffmpeg.read_frames(str(tmp_path / "interp.mp4"))
    meta = next(reader)  # H.264 in yuv420p needs even sides: 12 on the short side, 24 on the long one
    assert meta["size"] == (w * 12 // 8, h * 12 // 8) and len(list(reader)) == 4


def test_sizes_and_the_memory_estimate_count_width_and_height():
    assert shown_size((8, 16), None) == (8, 16) and shown_size((8, 16), 12) == (12, 24)
    assert shown_size((32, 16), 8) == (16, 8) and shown_size((16, 16), 24) == (24, 24)
    assert describe((256, 512)) == "512x256 px" and describe((64, 64)) == "64 px"
    square = StyleGAN3Generator(resolution=16, z_dim=8, w_dim=8, channel_base=128, channel_max=16, num_layers=4)
    assert image_size(square) == (16, 16)
    paths = dict(network="G.safetensors", outdir="out")
    o = GenerateOptions.parse(**paths, seeds="0-5", grid="2x3", size=256)
    needs, disk = needs_of(o, (128, 256), 3, 10**6, False, None)
    assert needs[1].what == "--batch 16: 6 images of 256x128 px shown at 512x256 px"
    assert needs[-1].what == "--grid 2x3 at 512x256 px: a 1536x512 image" and disk == 6 * 256 * 512 * 3


def test_projected_latents_with_non_square_noise_maps_render(network, tmp_path):
    """A projection of a non-square network keeps its noise maps, each (H, W) of its layer; generate renders them."""
    snapshot, (h, w) = network
    G, _ = load_snapshot(snapshot)
    ws = np.random.default_rng(0).standard_normal((1, G.num_ws, G.w_dim)).astype(np.float32)
    noise = {name: G.synthesis.get_buffer(name)[None].numpy() for name in noise_buffer_names(G)}
    assert any(m.shape[1] != m.shape[2] for m in noise.values())
    write_projected_w(tmp_path / "projected_w.npz", ws, noise)
    assert read_projected(tmp_path / "projected_w.npz", G.num_ws, G.w_dim).w.shape == ws.shape
    generate(options(snapshot, tmp_path / "out", projected_w=(tmp_path / "projected_w.npz",)))
    assert read_png(tmp_path / "out" / "proj00.png").shape == (h, w, 3)
