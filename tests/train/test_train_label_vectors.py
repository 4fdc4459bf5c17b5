"""A conditional run on label vectors streamed from shards: the networks take the vectors' length as their
conditioning dimension, the reals' vectors reach the discriminator and the generator, and the run continues from its
checkpoint."""

import json

import numpy as np
from click.testing import CliRunner
from PIL import Image
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
    # The snapshot says its label inputs are vectors: a class is refused naming them (it was taken as a one-hot
    # vector: "pick a class from 0 to 2"), a vector is taken.
    assert G.label_space == {"kind": "vectors", "names": ["round", "bright", "size"]}
    generate = ["generate", "--network", str(snapshot), "--outdir", str(tmp_path / "out"), "--seeds", "0"]
    refused = CliRunner().invoke(main, [*generate, "--class", "1"])
    assert refused.exit_code == 2 and refused.output == (
        f"error: --class 1: {snapshot} takes label vectors of 3 numbers (round, bright, size), not classes; give one "
        "with --label V,V,... or a file of them with --label-file\n"
    )
    missing = CliRunner().invoke(main, generate)
    assert missing.exit_code == 2 and "error: --label: " in missing.output and "not classes" in missing.output
    assert CliRunner().invoke(main, [*generate, "--label", "1,0,2.5"]).exit_code == 0
    Image.fromarray(np.zeros((8, 8), np.uint8)).save(tmp_path / "target.png")
    project = ["project", "--network", str(snapshot), "--target", str(tmp_path / "target.png"), "--outdir",
               str(tmp_path / "proj"), "--steps", "1", "--perceptual", "none", "--class", "0"]  # fmt: skip
    refused = CliRunner().invoke(main, project)
    assert refused.exit_code == 2 and refused.output == (
        "error: --class: the network takes label vectors of 3 numbers (round, bright, size), not classes; "
        "ganforge project conditions on a class only\n"
    )
    # The same command with more kimg continues the run: a resume's checks build the conditional networks its
    # checkpoint describes (3 label inputs) and find its tensors in them.
    longer = CliRunner().invoke(main, tiny_args(tmp_path / "shards", tmp_path / "runs", kimg=0.024, cond=True))
    assert longer.exit_code == 0 and "resuming at 0.016 kimg" in longer.output, longer.output
