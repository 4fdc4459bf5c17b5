"""Helpers for the report tests: a tiny dataset, and other run states derived from a real run."""

import json
import shutil
from pathlib import Path

import numpy as np
import PIL.Image


def make_dataset(folder: Path, count: int = 16, res: int = 8) -> Path:
    """Greyscale squares at random places, every image distinct."""
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for i in range(count):
        img = np.full((res, res), 60, np.uint8)
        x, y = rng.integers(0, res // 2, 2)
        img[y : y + res // 2, x : x + res // 2] = 200
        img[-1, -1] = i
        PIL.Image.fromarray(img).save(folder / f"{i:03d}.png")
    return folder


def copy_run(run: Path, dest: Path, name: str | None = None) -> Path:
    """A copy of `run` in the folder `dest`, under its own name or `name`."""
    return Path(shutil.copytree(run, dest / (name or run.name)))


def rewrite_stats(run: Path, change) -> None:
    """Apply `change(record) -> record` to every line of stats.jsonl."""
    path = run / "stats.jsonl"
    records = [change(json.loads(line)) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def handmade_run(folder: Path, name: str = "00000-squares-tiny-gpus1-batch8") -> Path:
    """A finished two-tick run written by hand with what `report` reads (no training: for the tests of damaged
    files, which only need valid files to damage): config, log, stats, a metric, grids, a snapshot name."""
    run = folder / name
    (run / "snapshots").mkdir(parents=True)
    data = {"name": "squares", "resolution": 8, "channels": 1}
    (run / "config.json").write_text(json.dumps({"preset": "tiny", "data": data, "schedule": {"kimg": 0.016}}))
    (run / "log.txt").write_text("starting at 0 kimg in runs/x\nwarning: data-bound\ndone: 0.016 kimg; results\n")
    records = [{"tick": t, "kimg": t * 0.008, "Loss/G/main": 1.0 / t, "Loss/D/main": 0.5 * t} for t in (1, 2)]
    (run / "stats.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    result = {"snapshot": "snapshots/network-snapshot-000000.016.safetensors", "results": {"fid50k_full": 300.0}}
    (run / "metric-fid50k_full.jsonl").write_text(json.dumps(result) + "\n")
    PIL.Image.fromarray(np.full((8, 16), 128, np.uint8)).save(run / "fakes000000.016.png")
    (run / "snapshots" / "network-snapshot-000000.016.safetensors").write_bytes(b"placeholder")
    return run
