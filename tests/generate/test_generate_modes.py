"""Grid, style-mixing table (and its cells), looping interpolation and grids of them (mp4 with the video extra;
WebP/GIF through Pillow), at the network's resolution or --size, at --fps."""

import importlib.util

import numpy as np
import PIL.Image
import pytest
import torch
from generate_helpers import by_hand, options, read_png, tiny_snapshot

from ganforge.data.loader import to_uint8
from ganforge.errors import UserError
from ganforge.generate import generate, writers
from ganforge.snapshot import load_snapshot

RES = 16


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory):
    return tiny_snapshot(tmp_path_factory.mktemp("snapshots") / "G.safetensors")


def cell(image: np.ndarray, row: int, col: int, side: int = RES) -> np.ndarray:
    return image[row * side : (row + 1) * side, col * side : (col + 1) * side]


def test_grid_is_the_seed_images_row_major(snapshot, tmp_path):
    seeds = (0, 1, 2, 3, 4, 5)
    assert generate(options(snapshot, tmp_path, seeds=seeds, grid=(2, 3)))["written"] == ["grid.png"]
    grid, expected = read_png(tmp_path / "grid.png"), by_hand(snapshot, seeds)
    assert grid.shape == (2 * RES, 3 * RES, 3)
    for i in range(6):
        assert np.array_equal(cell(grid, i // 3, i % 3), expected[i])
    generate(options(snapshot, tmp_path / "big", seeds=seeds, grid=(3, 2), size=2 * RES, resize="nearest"))
    big = read_png(tmp_path / "big" / "grid.png")
    assert big.shape == (6 * RES, 4 * RES, 3)
    for i in range(6):
        assert np.array_equal(cell(big, i // 2, i % 2, 2 * RES), expected[i].repeat(2, axis=0).repeat(2, axis=1))


def test_a_grid_that_seeds_do_not_fill_is_refused_before_anything_is_made(snapshot, tmp_path):
    with pytest.raises(UserError) as err:
        generate(options(snapshot, tmp_path / "out", seeds=tuple(range(8)), grid=(4, 8)))
    assert err.value.problems == [
        "--grid 4x8: 32 cells, --seeds gives 8 images; give 32 seeds, or a grid of 8 cells (e.g. --grid 2x4)"
    ]
    assert not (tmp_path / "out").exists()


def test_style_mixing_table(snapshot, tmp_path):
    rows, cols = (1, 2), (3, 4, 5)
    generate(options(snapshot, tmp_path, style_mix=(rows, cols), mix_layers=(0, 1), trunc=0.8, batch=1))
    table = read_png(tmp_path / "stylemix.png")
    assert table.shape == (3 * RES, 4 * RES, 3) and not cell(table, 0, 0).any()
    top, left = by_hand(snapshot, cols, psi=0.8, batch=1), by_hand(snapshot, rows, psi=0.8, batch=1)
    G, _ = load_snapshot(snapshot)
    for c in range(3):
        assert np.array_equal(cell(table, 0, c + 1), top[c])
    for r in range(2):
        assert np.array_equal(cell(table, r + 1, 0), left[r])
        for c in range(3):
            ws = mapped(G, rows[r], 0.8)
            ws[:, :2] = mapped(G, cols[c], 0.8)[:, :2]  # coarse styles from the column seed
            with torch.no_grad():
                expected = to_uint8(G.synthesis(ws, noise_mode="const"))[0].permute(1, 2, 0).numpy()
            assert np.array_equal(cell(table, r + 1, c + 1), expected)


def test_mix_cells_writes_each_mixed_cell_of_the_table_once(snapshot, tmp_path):
    rows, cols = (1, 2, 1), (3, 4)
    summary = generate(options(snapshot, tmp_path, style_mix=(rows, cols), mix_cells=True, size=24, batch=4))
    names = ["mix0000001-0000003.png", "mix0000001-0000004.png", "mix0000002-0000003.png", "mix0000002-0000004.png"]
    assert summary["written"] == ["stylemix.png", *names]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(summary["written"])
    table = read_png(tmp_path / "stylemix.png")
    assert table.shape == (4 * 24, 3 * 24, 3)
    for r, c in ((0, 0), (0, 1), (1, 0), (1, 1)):
        own = read_png(tmp_path / f"mix{rows[r]:07d}-{cols[c]:07d}.png")
        assert np.array_equal(own, cell(table, r + 1, c + 1, 24))
    assert not np.array_equal(cell(table, 1, 1, 24), cell(table, 1, 2, 24))


def mapped(G, seed, psi):
    z = torch.from_numpy(np.random.RandomState(seed).randn(1, G.z_dim)).float()
    with torch.no_grad():
        return G.mapping(z, None, psi=psi)


def frames(path) -> list[np.ndarray]:
    with PIL.Image.open(path) as animation:
        assert animation.info.get("loop") == 0  # loops forever
        return [np.asarray(animation.seek(i) or animation.convert("RGB")) for i in range(animation.n_frames)]


def durations(path) -> list[int]:
    found = []
    with PIL.Image.open(path) as animation:
        for i in range(animation.n_frames):
            animation.seek(i)
            animation.load()  # Pillow reads a WebP frame's duration with its pixels
            found.append(animation.info["duration"])
    return found


def test_interpolation_through_pillow_when_the_video_extra_is_absent(snapshot, tmp_path, monkeypatch):
    monkeypatch.setattr(writers, "ffmpeg_available", lambda: False)
    with pytest.raises(UserError, match=r"--interp-format mp4: needs the video extra: pip install 'ganforge\[video\]'"):
        generate(options(snapshot, tmp_path, seeds=(0, 1), interp=3, interp_format="mp4"))
    summary = generate(options(snapshot, tmp_path, seeds=(0, 1), interp=3, interp_space="w", batch=1, fps=12.5))
    assert summary["written"] == ["interp.webp"] and durations(tmp_path / "interp.webp") == [80] * 6
    video, keys = frames(tmp_path / "interp.webp"), by_hand(snapshot, (0, 1), batch=1)
    assert len(video) == 6 and np.array_equal(video[0], keys[0]) and np.array_equal(video[3], keys[1])
    assert not np.array_equal(video[1], keys[0]) and not np.array_equal(video[1], video[2])
    generate(options(snapshot, tmp_path, seeds=(0, 1, 2), interp=2, interp_format="gif"))
    video = frames(tmp_path / "interp.gif")  # GIF has a 256-colour palette: frames are close, not equal
    assert len(video) == 6 and np.abs(video[2].astype(int) - by_hand(snapshot, (1,))[0]).mean() < 8


@pytest.mark.skipif(importlib.util.find_spec("imageio_ffmpeg") is None, reason="the video extra is not installed")
def test_interpolation_as_mp4_with_the_video_extra(snapshot, tmp_path):
    import imageio_ffmpeg

    assert generate(options(snapshot, tmp_path, seeds=(0, 1, 2), interp=4, fps=24))["written"] == ["interp.mp4"]
    reader = imageio_ffmpeg.read_frames(str(tmp_path / "interp.mp4"))
    meta = next(reader)
    video = [np.frombuffer(f, np.uint8).reshape(RES, RES, 3) for f in reader]
    assert meta["size"] == (RES, RES) and meta["fps"] == 24 and len(video) == 12
    keys = by_hand(snapshot, (0, 1)).astype(int)
    errors = [[np.abs(video[i].astype(int) - key).mean() for key in keys] for i in (0, 4)]
    assert errors[0][0] < errors[0][1] and errors[1][1] < errors[1][0]  # H.264 in yuv420p is lossy on 16 px noise


@pytest.mark.skipif(importlib.util.find_spec("imageio_ffmpeg") is None, reason="the video extra is not installed")
def test_an_mp4_grid_of_loops_at_a_size_and_frame_rate(snapshot, tmp_path):
    import imageio_ffmpeg

    generate(options(snapshot, tmp_path, seeds=tuple(range(8)), grid=(2, 2), interp=3, size=40, fps=7.5))
    reader = imageio_ffmpeg.read_frames(str(tmp_path / "interp.mp4"))
    meta = next(reader)
    assert meta["size"] == (80, 80) and meta["fps"] == 7.5 and len(list(reader)) == 6
    with pytest.raises(UserError, match=r"--size: an mp4 frame must have an even width and height .* 33x33"):
        generate(options(snapshot, tmp_path / "odd", seeds=(0, 1), interp=3, size=33))
    assert not (tmp_path / "odd").exists()


def test_a_grid_of_loops_is_each_cells_own_loop_whatever_the_batch(snapshot, tmp_path):
    seeds = tuple(range(6))  # three cells of two seeds each
    for batch in (1, 2, 16):
        generate(options(snapshot, tmp_path / f"grid{batch}", seeds=seeds, grid=(1, 3), interp=2, batch=batch,
                         interp_format="webp", noise_mode="random"))  # fmt: skip
    grid = frames(tmp_path / "grid1" / "interp.webp")
    assert len(grid) == 4 and grid[0].shape == (RES, 3 * RES, 3)
    for k in range(3):
        own = seeds[2 * k : 2 * k + 2]  # noise follows the cell's first seed, as a loop of its own seeds does
        generate(options(snapshot, tmp_path / f"cell{k}", seeds=own, interp=2, batch=1, interp_format="webp",
                         noise_mode="random"))  # fmt: skip
        for frame, alone in zip(grid, frames(tmp_path / f"cell{k}" / "interp.webp"), strict=True):
            assert np.array_equal(cell(frame, 0, k), alone)
    for batch in (2, 16):  # frames made several cells and frames at a time: the same loops, rounded in batches
        batched = np.stack(frames(tmp_path / f"grid{batch}" / "interp.webp")).astype(int)
        assert np.abs(batched - np.stack(grid)).max() <= 1


def test_what_a_container_cannot_hold_is_refused_before_anything_is_made(snapshot, tmp_path):
    with pytest.raises(UserError, match=r"--fps 60: GIF stores frame times in hundredths of a second"):
        generate(options(snapshot, tmp_path / "out", seeds=(0, 1), interp=2, interp_format="gif", fps=60))
    assert not (tmp_path / "out").exists()
    with pytest.raises(UserError) as err:
        writers.check_animation("mp4", 120, 66, 33)
    assert err.value.problems == [
        "--size: an mp4 frame must have an even width and height (H.264 in yuv420p), this one is 66x33; use an even "
        "--size, or --interp-format webp"
    ]
    writers.check_animation("mp4", 120, 66, 34)
    writers.check_animation("gif", 50, 33, 33)
    writers.check_animation("webp", 120, 33, 33)
