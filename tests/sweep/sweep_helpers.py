"""A tiny sweep: 8 px trials of a few steps on CPU, measured by SWD on 16 fakes at every snapshot."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "train"))  # the training tests' tiny dataset
from train_helpers import make_dataset  # noqa: E402

__all__ = ["FIXED", "make_dataset", "sweep_args"]

# What every trial of the tests fixes: tiny steps, a snapshot per tick, nothing slow written.
FIXED = ("batch=8", "tick=0.016", "snap=1", "workers=0", "aug=noaug", "no-report=true", "gamma=1")


def sweep_args(data: Path, outdir: Path, trials: int, *space: str, kimg: str = "0.032", **extra) -> list[str]:
    args = ["sweep", "--data", str(data), "--outdir", str(outdir), "--cfg", "tiny", "--kimg", kimg,
            "--trials", str(trials), "--metric", "swd16k", "--metrics-gen", "16", "--device", "cpu"]  # fmt: skip
    for entry in (*FIXED, *space):
        args += ["--space", entry]
    for key, value in extra.items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    return args
