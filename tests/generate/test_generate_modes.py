"""Grid, style-mixing table and looping interpolation (mp4 with the video extra; WebP/GIF through Pillow)."""

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


def cell(image: np.ndarray, row: int, col: int) -> np.ndarray:
    return image[row * RES : (row + 1) * RES, col * RES : (col + 1) * RES]


def test_grid_is_the_seed_images_row_major_padded_with_black(snapshot, tmp_path):
    seeds = (0, 1, 2, 3, 4)
    assert generate(options(snapshot, tmp_path, seeds=seeds, grid=(2, 3)))["written"] == ["grid.png"]
    grid, expected = read_png(tmp_path / "grid.png"), by_hand(snapshot, seeds)
    assert grid.shape == (2 * RES, 3 * RES, 3)
    for i in range(5):
        assert np.array_equal(cell(grid, i // 3, i % 3), expected[i])
    assert not cell(grid, 1, 2).any()


def test_style_mixing_table(snapshot, tmp_path):
    rows, cols = (1, 2), (3, 4, 5)
    generate(options(snapshot, tmp_path, style_mix=(rows, cols), mix_layers=(0, 1), trunc=0.8))
    table = read_png(tmp_path / "stylemix.png")
    assert table.shape == (3 * RES, 4 * RES, 3) and not cell(table, 0, 0).any()
    top, left = by_hand(snapshot, cols, psi=0.8), by_hand(snapshot, rows, psi=0.8)
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


def mapped(G, seed, psi):
    z = torch.from_numpy(np.random.RandomState(seed).randn(1, G.z_dim)).float()
    with torch.no_grad():
        return G.mapping(z, None, psi=psi)


def frames(path) -> list[np.ndarray]:
    with PIL.Image.open(path) as animation:
        assert animation.info.get("loop") == 0  # loops forever
        return [np.asarray(animation.seek(i) or animation.convert("RGB")) for i in range(animation.n_frames)]


def test_interpolation_through_pillow_when_the_video_extra_is_absent(snapshot, tmp_path, monkeypatch):
    monkeypatch.setattr(writers, "ffmpeg_available", lambda: False)
    with pytest.raises(UserError, match=r"--interp-format mp4: needs the video extra: pip install 'ganforge\[video\]'"):
        generate(options(snapshot, tmp_path, seeds=(0, 1), interp=3, interp_format="mp4"))
    assert generate(options(snapshot, tmp_path, seeds=(0, 1), interp=3, interp_space="w"))["written"] == ["interp.webp"]
    video, keys = frames(tmp_path / "interp.webp"), by_hand(snapshot, (0, 1))
    assert len(video) == 6 and np.array_equal(video[0], keys[0]) and np.array_equal(video[3], keys[1])
    assert not np.array_equal(video[1], keys[0]) and not np.array_equal(video[1], video[2])
    generate(options(snapshot, tmp_path, seeds=(0, 1, 2), interp=2, interp_format="gif"))
    video = frames(tmp_path / "interp.gif")  # GIF has a 256-colour palette: frames are close, not equal
    assert len(video) == 6 and np.abs(video[2].astype(int) - by_hand(snapshot, (1,))[0]).mean() < 8


@pytest.mark.skipif(importlib.util.find_spec("imageio_ffmpeg") is None, reason="the video extra is not installed")
def test_interpolation_as_mp4_with_the_video_extra(snapshot, tmp_path):
    import imageio_ffmpeg

    assert generate(options(snapshot, tmp_path, seeds=(0, 1, 2), interp=4))["written"] == ["interp.mp4"]
    reader = imageio_ffmpeg.read_frames(str(tmp_path / "interp.mp4"))
    meta = next(reader)
    video = [np.frombuffer(f, np.uint8).reshape(RES, RES, 3) for f in reader]
    assert meta["size"] == (RES, RES) and meta["fps"] == writers.FPS and len(video) == 12
    keys = by_hand(snapshot, (0, 1)).astype(int)
    errors = [[np.abs(video[i].astype(int) - key).mean() for key in keys] for i in (0, 4)]
    assert errors[0][0] < errors[0][1] and errors[1][1] < errors[1][0]  # H.264 in yuv420p is lossy on 16 px noise
