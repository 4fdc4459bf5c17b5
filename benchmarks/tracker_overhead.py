"""What `train --tracker` costs a run: the same tiny run without a tracker, with MLflow (a real server on loopback)
and with W&B (offline), interleaved, each timed whole; and the time training's own thread spends handing a tick to
the trackers (the rest happens on their background threads).

    python benchmarks/tracker_overhead.py [--kimg 0.096] [--repeats 3]
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "track"))
from mlflow_server import mlflow_server  # noqa: E402
from track_helpers import squares_zip, train_args  # noqa: E402

from ganforge.cli import main  # noqa: E402
from ganforge.track import session  # noqa: E402


def timed_run(data: Path, outdir: Path, kimg: float, tracking: list[str]) -> tuple[float, int]:
    """(seconds of the whole command, ticks) of one fresh tiny run."""
    args = train_args(data, outdir, kimg, "--resume", "new", *tracking, snap=4)
    start = time.perf_counter()
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    seconds = time.perf_counter() - start
    assert result.exit_code == 0, result.output
    ticks = sum(len((run / "stats.jsonl").read_text().splitlines()) for run in outdir.iterdir())
    return seconds, ticks


def hand_over_us(repeats: int = 2000) -> float:
    """Microseconds training's thread spends in TrackedRun.tick with one tracker (a queue put per event)."""

    class Sink:
        name = "mlflow"

        def __getattr__(self, method):
            return lambda *args: None

    run = session.TrackedRun.__new__(session.TrackedRun)
    run.trackers = [session.BackgroundTracker(Sink(), print)]
    record = {"tick": 1, "kimg": 0.008} | {f"Stat/{i}": float(i) for i in range(60)}  # about a real tick's keys
    start = time.perf_counter()
    for i in range(repeats):
        run.tick(record, [], i)
    return (time.perf_counter() - start) / repeats * 1e6


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kimg", type=float, default=0.096)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        data = squares_zip(root, count=32)
        (root / "server").mkdir()
        os.environ.update(WANDB_MODE="offline", WANDB_SILENT="true", HOME=str(root))
        with mlflow_server(root / "server") as server:
            variants = {"none": [], "mlflow": ["--tracker", "mlflow", "--tracker-uri", server.uri],
                        "wandb": ["--tracker", "wandb"]}  # fmt: skip
            timed_run(data, root / "warm-up", args.kimg, [])
            seconds = {name: [] for name in variants}
            ticks = 0
            for repeat in range(args.repeats):
                for name, tracking in variants.items():
                    spent, ticks = timed_run(data, root / f"{name}{repeat}", args.kimg, tracking)
                    seconds[name].append(spent)
    base = statistics.median(seconds["none"])
    print(f"tiny run of {args.kimg:g} kimg, {ticks} ticks, median of {args.repeats} interleaved runs each")
    print(f"{'tracker':>8} {'run s':>8} {'per tick ms':>12} {'vs none':>8}")
    for name, values in seconds.items():
        run = statistics.median(values)
        print(f"{name:>8} {run:8.2f} {1000 * (run - base) / ticks:12.1f} {run / base:7.2f}x")
    print(f"training's thread hands a tick of 62 values to a tracker in {hand_over_us():.1f} us")
    print(json.dumps({name: [round(v, 3) for v in values] for name, values in seconds.items()}))


if __name__ == "__main__":
    main_()
