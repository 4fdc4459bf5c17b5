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
