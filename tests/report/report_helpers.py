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
