"""`ganforge generate --edit-*`: every image's ws moved along one direction of W (a dimension, a random unit direction
from a seed, or a one-row projected_w.npz) by --edit-amount, on the --edit-layers ws; each image is what the synthesis
network makes of the moved ws, computed here by hand; the flags that do not go together are refused in one line."""

import numpy as np
import pytest
import torch
from click.testing import CliRunner
from generate_helpers import read_png, tiny_snapshot

from ganforge.cli import main
from ganforge.data.loader import to_uint8
from ganforge.generate.edits import unit_direction
from ganforge.projected import write_projected_w
from ganforge.snapshot import load_snapshot

NUM_WS, W_DIM = 6, 8  # the tiny StyleGAN2 of generate_helpers


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory):
    return tiny_snapshot(tmp_path_factory.mktemp("snapshots") / "G.safetensors")


def run(network, outdir, *args):
    return CliRunner().invoke(
        main, ["generate", "--network", str(network), "--outdir", str(outdir), "--device", "cpu", *map(str, args)]
    )


def by_hand(network, seed: int, move: np.ndarray) -> np.ndarray:
    """uint8 [H, W, C] of `seed`'s ws plus `move` [num_ws, w_dim], synthesized alone."""
    G, _ = load_snapshot(network)
    z = torch.from_numpy(np.random.RandomState(seed).randn(1, G.z_dim)).float()
    with torch.no_grad():
        ws = G.mapping(z, torch.zeros([1, 0])) + torch.from_numpy(move)
        return to_uint8(G.synthesis(ws, noise_mode="const")).permute(0, 2, 3, 1).numpy()[0]


def test_a_random_unit_direction_is_drawn_from_its_seed():
    direction = unit_direction(5, 512)
    assert direction.dtype == np.float32 and abs(float(np.linalg.norm(direction)) - 1) < 1e-6
    assert np.array_equal(direction, unit_direction(5, 512)) and not np.allclose(direction, unit_direction(6, 512))
    draw = np.random.RandomState(5).randn(512)  # numpy's normal draw, as z is drawn from a seed
    assert np.allclose(direction, draw / np.linalg.norm(draw))


def test_a_seed_direction_moves_only_the_chosen_ws_by_the_amount(snapshot, tmp_path):
    assert (
        run(snapshot, tmp_path, "--seeds", 3, "--edit-seed", 5, "--edit-amount", 2.5, "--edit-layers", "1-3").exit_code
        == 0
    )
    move = np.zeros([NUM_WS, W_DIM], np.float32)
    move[1:4] = 2.5 * unit_direction(5, W_DIM)
    edited = read_png(tmp_path / "seed0000003.png")
    assert np.array_equal(edited, by_hand(snapshot, 3, move))
    assert not np.array_equal(edited, by_hand(snapshot, 3, np.zeros_like(move)))


def test_a_dimension_moves_every_w_along_that_axis(snapshot, tmp_path):
    assert run(snapshot, tmp_path, "--seeds", 4, "--edit-dim", 6, "--edit-amount", -3).exit_code == 0
    move = np.zeros([NUM_WS, W_DIM], np.float32)
    move[:, 6] = -3
    assert np.array_equal(read_png(tmp_path / "seed0000004.png"), by_hand(snapshot, 4, move))


def test_a_file_direction_is_taken_as_it_is_and_moves_projected_rows_too(snapshot, tmp_path):
    rng = np.random.default_rng(0)
    direction, rows = rng.standard_normal((1, NUM_WS, W_DIM)), rng.standard_normal((2, NUM_WS, W_DIM))
    write_projected_w(tmp_path / "direction.npz", direction)
    write_projected_w(tmp_path / "rows.npz", rows)
    args = ("--projected-w", tmp_path / "rows.npz", "--edit-file", tmp_path / "direction.npz", "--edit-amount", 0.5)
    assert run(snapshot, tmp_path / "out", *args, "--batch", 1).exit_code == 0
    G, _ = load_snapshot(snapshot)
    ws = torch.from_numpy(rows.astype(np.float32)) + torch.from_numpy((0.5 * direction[0]).astype(np.float32))
    for row in range(2):
        with torch.no_grad():
            made = to_uint8(G.synthesis(ws[row : row + 1], noise_mode="const")).permute(0, 2, 3, 1).numpy()[0]
        assert np.array_equal(read_png(tmp_path / "out" / f"proj0{row}.png"), made)


REFUSED = {
    "no amount": (("--seeds", 0, "--edit-dim", 1), "--edit-dim: give --edit-amount too"),
    "no direction": (("--seeds", 0, "--edit-amount", 1), "--edit-amount: only used with --edit-dim, --edit-seed"),
    "layers alone": (("--seeds", 0, "--edit-layers", "0-2"), "--edit-layers: only used with"),
    "two directions": (
        ("--seeds", 0, "--edit-dim", 1, "--edit-seed", 2, "--edit-amount", 1),
        "--edit-dim and --edit-seed: choose one direction",
    ),
    "with interp": (
        ("--seeds", "0,1", "--interp", 2, "--edit-seed", 2, "--edit-amount", 1),
        "--edit-seed with --interp: edits move the ws of single images and grids only",
    ),
    "amount nan": (("--seeds", 0, "--edit-seed", 2, "--edit-amount", "nan"), "--edit-amount nan: must be a distance"),
    "amount far": (("--seeds", 0, "--edit-seed", 2, "--edit-amount", 101), "from -100 to 100"),
    "dimension beyond": (("--seeds", 0, "--edit-dim", 8, "--edit-amount", 1), "have 8 dimensions, 0 to 7"),
    "layers beyond": (
        ("--seeds", 0, "--edit-dim", 1, "--edit-amount", 1, "--edit-layers", "4-9"),
        "has ws 0 to 5, not 6, 7, 8 and 1 more",
    ),
    "layers backwards": (("--seeds", 0, "--edit-dim", 1, "--edit-amount", 1, "--edit-layers", "3-1"), "runs backwards"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_edit_flags_that_do_not_go_together_are_refused_in_one_line(snapshot, tmp_path, case):
    args, message = REFUSED[case]
    result = run(snapshot, tmp_path, *args)
    assert result.exit_code == 2 and message in result.output, result.output
    assert "Traceback" not in result.output and not list(tmp_path.iterdir())


def test_a_direction_file_of_several_rows_is_refused(snapshot, tmp_path):
    write_projected_w(tmp_path / "two.npz", np.ones((2, NUM_WS, W_DIM)))
    result = run(snapshot, tmp_path / "out", "--seeds", 0, "--edit-file", tmp_path / "two.npz", "--edit-amount", 1)
    assert result.exit_code == 2 and "holds 2 rows; a direction is one row of ws" in result.output, result.output


def test_a_grid_is_moved_as_its_images_are(snapshot, tmp_path):
    edit = ("--edit-seed", 1, "--edit-amount", 2)
    assert run(snapshot, tmp_path / "images", "--seeds", "0-3", *edit).exit_code == 0
    assert run(snapshot, tmp_path / "grid", "--seeds", "0-3", "--grid", "2x2", *edit).exit_code == 0
    assert run(snapshot, tmp_path / "still", "--seeds", "0-3", "--grid", "2x2").exit_code == 0
    grid = read_png(tmp_path / "grid" / "grid.png")
    cells = [grid[r * 16 : (r + 1) * 16, c * 16 : (c + 1) * 16] for r in range(2) for c in range(2)]
    images = [read_png(tmp_path / "images" / f"seed000000{seed}.png") for seed in range(4)]
    assert all(np.array_equal(cell, image) for cell, image in zip(cells, images, strict=True))
    assert not np.array_equal(grid, read_png(tmp_path / "still" / "grid.png"))
