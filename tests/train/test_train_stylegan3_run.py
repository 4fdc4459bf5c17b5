"""`--cfg tiny3` end to end on the CPU: the CLI trains the alias-free generator with ADA, writes StyleGAN3 snapshots and
checkpoints that carry every magnitude_ema, and resumes bitwise (two ranks against one: test_train_two_ranks.py)."""

import json
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner
from train_helpers import continued_equals_straight, make_dataset, tiny_options

from ganforge import checkpoint
from ganforge.cli import main
from ganforge.snapshot import load_snapshot

TINY3 = ["--cfg", "tiny3", "--batch", "4", "--tick", "0.004", "--snap", "2", "--workers", "0", "--device", "cpu",
         "--ada-kimg", "0.02", "--target", "0.1", "--no-report"]  # fmt: skip


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("train_sg3_run") / "squares", count=8)


def _train(data: Path, outdir: Path, kimg: float) -> None:
    args = ["train", "--data", str(data), "--outdir", str(outdir), "--kimg", f"{kimg:g}", *TINY3]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output


def test_tiny3_trains_through_the_cli_and_a_stopped_run_continues_bitwise(data, tmp_path):
    resumed = continued_equals_straight(lambda outdir, kimg: _train(data, outdir, kimg), tmp_path, 0.02)
    (run,) = (tmp_path / "stopped").iterdir()
    state = checkpoint.load(resumed)
    magnitudes = {k: v for k, v in state["G"].items() if k.endswith("magnitude_ema")}
    assert len(magnitudes) == 5 and all(v.item() != 1.0 for v in magnitudes.values())  # tracked, and saved
    assert all(torch.equal(state["G_ema"][k], v) for k, v in magnitudes.items())
    assert state["augment"]["pipe"]["p"].item() > 0  # ADA adjusted p after step 4, from accumulators resumed
    config = json.loads((run / "config.json").read_text())
    assert config["model"]["generator"] == "stylegan3-t" and config["loss"]["pl_weight"] == 0.0
    G, meta = load_snapshot(sorted((run / "snapshots").iterdir())[-1])
    assert type(G).__name__ == "StyleGAN3Generator" and G.config["config"] == "t" and meta["kimg"] == 0.02
    assert G.config["num_layers"] == 4 and G.resolution == 8 and G.img_channels == 1


@pytest.mark.cuda
def test_tiny3_fp16_uses_the_per_layer_recipe_on_cuda(data, tmp_path):
    """--precision fp16 with a StyleGAN3 preset: the layers of the top 4 octaves in float16 with clamping at 256 in G
    and D, no autocast, and two steps train without a skipped step."""
    from ganforge.train import resolve, run
    from ganforge.train.build import build

    options = tiny_options(data, tmp_path, preset="tiny3", precision="fp16", device="cuda", kimg=0.016, tick=0.016)
    cfg = resolve(options)
    assert (cfg.precision.fp16_res, cfg.precision.conv_clamp) == (4, 256)
    t, _, _ = build(cfg, torch.device("cuda"))
    fp16_layers = [name for name in t.G.synthesis.layer_names if getattr(t.G.synthesis, name).use_fp16]
    assert t.precision.dtype is None and fp16_layers  # the networks cast per layer; no autocast
    assert run(cfg) == 0
    (run_dir,) = tmp_path.iterdir()
    records = [json.loads(line) for line in (run_dir / "stats.jsonl").read_text().splitlines()]
    assert sum(value for key, value in records[-1].items() if key.startswith("Skipped/")) == 0
    state = checkpoint.load_latest(run_dir / "checkpoints")
    assert all(torch.isfinite(value).all() for value in state["G"].values())
