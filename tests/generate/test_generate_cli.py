"""`ganforge generate` on the command line: every flag reaches the options, and bad input exits 2 listing all
problems without a traceback."""

import pytest
import torch
from click.testing import CliRunner
from generate_helpers import options, tiny_snapshot

from ganforge.cli import main
from ganforge.generate import generate


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory):
    return tiny_snapshot(tmp_path_factory.mktemp("snapshots") / "G.safetensors", c_dim=2)


def run(*args):
    return CliRunner().invoke(main, ["generate", *map(str, args)])


def test_flags_reach_the_options(snapshot, tmp_path):
    flags = ["--class", "1", "--trunc", "0.5", "--trunc-cutoff", "2", "--noise-mode", "random", "--batch", "1"]
    result = run("--network", snapshot, "--outdir", tmp_path / "cli", "--seeds", "0-1", *flags, "--device", "cpu")
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"wrote 2 images (seed0000000.png ... seed0000001.png) to {tmp_path / 'cli'}: ")
    generate(options(snapshot, tmp_path / "api", seeds=(0, 1), class_index=1, trunc=0.5, trunc_cutoff=2,
                     noise_mode="random", batch=1))  # fmt: skip
    for name in ("seed0000000.png", "seed0000001.png"):
        assert (tmp_path / "cli" / name).read_bytes() == (tmp_path / "api" / name).read_bytes()
    result = run(
        "--network", snapshot, "--outdir", tmp_path, "--class", "0", "--style-mix", "1-2", "3", "--mix-layers", "0"
    )
    assert result.exit_code == 0 and "wrote stylemix.png" in result.output, result.output
    flags = ["--interp", "2", "--interp-space", "w", "--interp-format", "gif"]
    result = run("--network", snapshot, "--outdir", tmp_path, "--class", "0", "--seeds", "1,2", *flags)
    assert result.exit_code == 0 and "wrote interp.gif" in result.output and "4 images generated" in result.output
    result = run("--network", snapshot, "--outdir", tmp_path, "--class", "0", "--seeds", "1,2", "--grid", "1x2")
    assert result.exit_code == 0 and (tmp_path / "grid.png").is_file(), result.output


def test_size_fps_grid_of_loops_and_mix_cells_reach_the_options(snapshot, tmp_path):
    flags = ["--seeds", "0-3", "--grid", "1x2", "--interp", "2", "--fps", "8", "--size", "20", "--resize", "nearest"]
    result = run("--network", snapshot, "--outdir", tmp_path / "cli", "--class", "1", *flags, "--interp-format", "webp")
    assert result.exit_code == 0 and "wrote interp.webp" in result.output, result.output
    generate(options(snapshot, tmp_path / "api", seeds=(0, 1, 2, 3), grid=(1, 2), interp=2, fps=8, size=20,
                     resize="nearest", class_index=1, interp_format="webp"))  # fmt: skip
    assert (tmp_path / "cli" / "interp.webp").read_bytes() == (tmp_path / "api" / "interp.webp").read_bytes()
    result = run("--network", snapshot, "--outdir", tmp_path, "--class", "0", "--style-mix", "1", "2", "--mix-cells")
    assert result.exit_code == 0 and "wrote 2 images (stylemix.png ... mix0000001-0000002.png)" in result.output


def test_the_grid_of_the_issue_exits_2_naming_both_counts(snapshot, tmp_path):
    result = run("--network", snapshot, "--outdir", tmp_path / "out", "--class", "0", "--seeds", "0-7", "--grid", "4x8")
    assert result.exit_code == 2 and not (tmp_path / "out").exists()
    assert result.output.splitlines() == [
        "error: --grid 4x8: 32 cells, --seeds gives 8 images; give 32 seeds, or a grid of 8 cells (e.g. --grid 2x4)"
    ]
    base = ("--network", snapshot, "--outdir", tmp_path, "--class", "0", "--seeds", "0-1", "--interp", "2")
    result = run(*base, "--fps", "nan")
    assert result.exit_code == 2
    assert result.output.splitlines() == ["error: --fps nan: frames per second must be a number from 0.1 to 120"]
    result = run(*base, "--size", "0")
    assert result.exit_code == 2 and result.output.count("\n") == 1
    assert "Invalid value for '--size': 0 is not in the range 1<=x<=8192" in result.output


def test_bad_input_exits_2_listing_every_problem(snapshot, tmp_path):
    result = run("--network", snapshot, "--outdir", tmp_path, "--seeds", "9-1", "--grid", "axb")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.output.splitlines() == [
        "error: --seeds 9-1: range 9-1 runs backwards; write 1-9",
        "error: --grid axb: write ROWSxCOLUMNS with both at least 1, e.g. 4x8",
    ]
    result = run("--network", tmp_path / "missing.pkl", "--outdir", tmp_path, "--seeds", "1")
    assert result.exit_code == 2 and "missing.pkl: no such file; supported: a ganforge snapshot" in result.output
    if not torch.cuda.is_available():
        result = run("--network", snapshot, "--outdir", tmp_path, "--seeds", "1", "--device", "cuda")
        assert result.exit_code == 2 and "error: --device cuda: " in result.output
        assert "pass --device cpu" in result.output
