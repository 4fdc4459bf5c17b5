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
    assert result.output.splitlines() == ["error: --fps nan: must be a number of frames per second from 0.1 to 120"]
    result = run(*base, "--size", "0")
    assert result.exit_code == 2 and result.output.splitlines() == ["error: --size 0: must be from 1 to 8,192"]


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


def test_a_run_folder_or_a_checkpoint_folder_names_its_newest_network(tmp_path):
    """--network RUN: its newest snapshot; a checkpoint folder (or a run without snapshots yet): its G_ema, which
    at the end of a run is the last snapshot's network, so the images are the same bytes. The choice is said."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[1] / "train"))
    from train_helpers import make_dataset, tiny_args

    data = make_dataset(tmp_path / "squares")
    assert CliRunner().invoke(main, tiny_args(data, tmp_path / "runs", kimg=0.016)).exit_code == 0
    (run_dir,) = (tmp_path / "runs").iterdir()
    newest = sorted((run_dir / "snapshots").glob("network-snapshot-*.safetensors"))[-1]
    (ckpt,) = [p for p in (run_dir / "checkpoints").glob("ckpt-*") if p.name.endswith("16")]
    made = {}
    for name, network in {"file": newest, "run": run_dir, "checkpoint": ckpt}.items():
        result = run("--network", network, "--outdir", tmp_path / name, "--seeds", "0-1", "--device", "cpu")
        assert result.exit_code == 0, result.output
        made[name] = [p.read_bytes() for p in sorted((tmp_path / name).glob("*.png"))]
        said = {"file": "", "run": f"its newest snapshot, {newest}", "checkpoint": f"G_ema of the checkpoint {ckpt}"}
        assert said[name] in result.stderr
    assert made["run"] == made["file"] == made["checkpoint"] and len(made["file"]) == 2
    from ganforge import checkpoint
    from ganforge.interop import load_network

    state, (G, _) = checkpoint.load(ckpt), load_network(ckpt)
    assert any(not torch.equal(state["G"][k], state["G_ema"][k]) for k in state["G"])  # G_ema, not G
    assert all(torch.equal(value, state["G_ema"][key]) for key, value in G.state_dict().items())
    result = run("--network", tmp_path / "squares", "--outdir", tmp_path / "none", "--seeds", "0")
    assert result.exit_code == 2 and "a folder with neither snapshots/" in result.output
