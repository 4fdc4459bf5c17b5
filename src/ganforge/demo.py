"""`make demo` helpers: a 32x32 greyscale dataset from scikit-learn's bundled handwritten digits, and a summary of
where a finished demo run put its results.

    python -m ganforge.demo digits DEST.zip    # 1,797 real 8x8 scans (UCI optdigits), upscaled, via `dataset build`
    python -m ganforge.demo where RUNS_DIR     # print the newest run's samples, logs, TensorBoard command, report
"""

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import PIL.Image

from ganforge.errors import UserError

RESOLUTION = 32


def write_digit_pngs(folder: Path) -> int:
    """Write every scan as a RESOLUTION x RESOLUTION greyscale PNG into `folder`; returns how many.

    The scans hold 17 grey levels (0-16) with ink high; they are scaled to 0-255 and upscaled with a bicubic filter,
    which smooths the 8x8 blocks into strokes.
    """
    digits = _load_digits()
    for i, (scan, label) in enumerate(zip(digits.images, digits.target, strict=True)):
        pixels = np.clip(scan * (255 / 16), 0, 255).astype(np.uint8)
        image = PIL.Image.fromarray(pixels, mode="L").resize((RESOLUTION, RESOLUTION), PIL.Image.Resampling.BICUBIC)
        image.save(folder / f"{i:04d}-{label}.png")
    return len(digits.images)


def _load_digits():
    """scikit-learn's bundled scans. scikit-learn is not a ganforge dependency (the dev extra, which `make demo`
    installs, brings it), so it is imported only here, and its absence is a user error with the fix."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise UserError(
            "the digits demo needs scikit-learn: pip install scikit-learn, or pip install -e '.[dev]' (what `make "
            "demo` installs)"
        ) from None
    return load_digits()


def build_digits(dest: Path) -> None:
    """PNGs in a temporary folder -> `ganforge dataset build` -> `dest` (skipped when it exists)."""
    if dest.exists():
        print(f"{dest} exists; reusing it")
        return
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        count = write_digit_pngs(Path(tmp))
        print(f"wrote {count} digit images ({RESOLUTION}x{RESOLUTION}, 1 channel) to {tmp}")
        command = [
            sys.executable,
            "-m",
            "ganforge",
            "dataset",
            "build",
            tmp,
            str(dest),
            "--transform",
            "none",
            "--channels",
            "1",
        ]
        print("$", " ".join(command[2:]).replace("-m ganforge", "ganforge"))
        subprocess.run(command, check=True)


def where(runs: Path) -> None:
    """Print where the newest run in `runs` keeps its samples, logs and TensorBoard files, how to explore it in a
    browser, and write its report (the last line)."""
    from ganforge.report import refresh_report

    run = max((p for p in runs.iterdir() if p.is_dir()), key=lambda p: p.name)
    fakes = sorted(run.glob("fakes*.png"))
    print(f"\nrun folder:   {run}")
    print(f"samples:      {fakes[-1] if fakes else '(none yet)'}  (training images: {run / 'reals.png'})")
    print(f"snapshots:    {run / 'snapshots'}   checkpoints: {run / 'checkpoints'}")
    print(f"logs:         {run / 'log.txt'}, {run / 'stats.jsonl'}")
    print(f"TensorBoard:  .venv/bin/tensorboard --logdir {runs}   then open http://localhost:6006")
    print(f"explore:      .venv/bin/ganforge explore --network {run}   (seeds, truncation, mixing in the browser)")
    print(f"report:       {refresh_report(run).removeprefix('report ')}   (one page: open it in any browser)")


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("digits", "where"):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        if argv[0] == "digits":
            build_digits(Path(argv[1]))
        else:
            where(Path(argv[1]))
    except UserError as error:
        for problem in error.problems:
            print(f"error: {problem}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
