"""Size and write time of `ganforge report` for a long run, made up in a temporary folder: a paper256-like run of
25,000 kimg (6,250 ticks of 4 kimg) with a grid every 200 kimg (125 grids of 1024x512 pixels) and FID at each.

    .venv/bin/python benchmarks/report_size.py                    # the run above
    .venv/bin/python benchmarks/report_size.py --ticks 100 --grids 5

Grids are smooth colour fields plus noise (harder to compress than real samples, so the size is an upper bound).
"""

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import PIL.Image

from ganforge.report import write_report


def make_run(run: Path, ticks: int, grids: int, tick_kimg: float, rng: np.random.Generator) -> None:
    run.mkdir(parents=True)
    total = ticks * tick_kimg
    config = {"cfg": "paper256", "data": {"name": "ffhq256", "resolution": 256, "channels": 3},
              "schedule": {"kimg": total}}  # fmt: skip
    (run / "config.json").write_text(json.dumps(config))
    (run / "log.txt").write_text(f"starting at 0 kimg in {run}\ndone: {total:g} kimg; results in {run}\n")
    walk = np.cumsum(rng.normal(0, 0.01, (ticks, 6)), axis=0)
    with open(run / "stats.jsonl", "w") as stats:
        for i in range(ticks):
            record = {"tick": i + 1, "kimg": (i + 1) * tick_kimg, "Loss/G/main": 1 + walk[i, 0],
                      "Loss/D/main": 1 + walk[i, 1], "Scores/real": walk[i, 2], "Scores/fake": -walk[i, 2],
                      "GradNorm/G_main": abs(walk[i, 3]) + 0.1, "LR/G_main": 0.0025, "Timing/img_per_s": 900.0,
                      "Timing/data_wait_share": 0.01, "Memory/peak_gb": 14.2, "Aug/p": abs(walk[i, 4])}  # fmt: skip
            stats.write(json.dumps(record) + "\n")
    y, x = np.mgrid[0:512, 0:1024]
    for g in range(grids):
        kimg = round((g + 1) * total / grids)
        field = np.stack([np.sin(x / 50 + g), np.cos(y / 40 - g), np.sin((x + y) / 70)], axis=-1) * 80 + 128
        pixels = np.clip(field + rng.normal(0, 12, field.shape), 0, 255).astype(np.uint8)
        PIL.Image.fromarray(pixels).save(run / f"fakes{kimg:06d}.png")
        line = {"snapshot": f"snapshots/network-snapshot-{kimg:06d}.safetensors", "metric": "fid50k_full",
                "results": {"fid50k_full": 100 / (1 + g)}}  # fmt: skip
        with open(run / "metric-fid50k_full.jsonl", "a") as metric:
            metric.write(json.dumps(line) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ticks", type=int, default=6250)
    parser.add_argument("--grids", type=int, default=125)
    parser.add_argument("--tick-kimg", type=float, default=4.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "00000-ffhq256-paper256-gpus8-batch64"
        make_run(run, args.ticks, args.grids, args.tick_kimg, np.random.default_rng(0))
        grids_mb = sum(p.stat().st_size for p in run.glob("fakes*.png")) / 2**20
        start = time.perf_counter()
        out = write_report(run)
        seconds = time.perf_counter() - start
        print(f"{args.ticks} ticks, {args.grids} grids ({grids_mb:.0f} MB of PNG): report.html "
              f"{out.stat().st_size / 2**20:.2f} MB, written in {seconds:.1f} s")  # fmt: skip


if __name__ == "__main__":
    main()
