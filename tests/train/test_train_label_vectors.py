"""A conditional run on label vectors streamed from shards: the networks take the vectors' length as their
conditioning dimension, and the reals' vectors reach the discriminator and the generator."""

import json

from click.testing import CliRunner
from train_helpers import make_dataset, tiny_args

from ganforge.cli import main
from ganforge.data.build import BuildOptions, build
from ganforge.snapshot import load_snapshot


def test_a_run_conditioned_on_label_vectors_from_shards(tmp_path):
    src = make_dataset(tmp_path / "src", count=16)
    rows = ["file,round,bright,size"] + [f"{i:03d}.png,{i % 2},{(i // 2) % 2},{0.25 * i:g}" for i in range(16)]
    (tmp_path / "labels.csv").write_text("\n".join(rows) + "\n")
    options = BuildOptions(resolution=8, channels=1, labels=str(tmp_path / "labels.csv"), format="shards", workers=0)
    build(src, tmp_path / "shards", options)
    result = CliRunner().invoke(main, tiny_args(tmp_path / "shards", tmp_path / "runs", kimg=0.016, cond=True))
    assert result.exit_code == 0, result.output
    (snapshot,) = sorted(tmp_path.glob("runs/*/snapshots/*.safetensors"))[-1:]
    G, _ = load_snapshot(snapshot)
    assert G.c_dim == 3
    labels = json.loads((snapshot.parent.parent / "labels.json").read_text())
    assert (labels["kind"], list(labels["columns"]), labels["columns"]["size"]["max"]) == (
        "vectors",
        ["round", "bright", "size"],
        3.75,
    )
