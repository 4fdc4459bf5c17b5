"""Does fine-tuning pay on a small dataset? The `tiny` preset is "pretrained" on the digits 0-4 (scikit-learn's scans
at 32x32, `ganforge.demo`) for a fixed wall-clock budget; then, on 100 images of the digits 5-9, variants train for
the same cumulative wall-clock budgets and are measured with KID (the standard Inception features) against every image
of the digits 5-9, the distribution the 100 were drawn from:

- scratch: the tiny preset from random weights;
- finetune: from the pretrained run (`--resume RUNDIR`: its G, G_ema, D and ADA's p, weights only, kimg from 0);
- freezed: finetune with `--freeze-d 4` (FreezeD: D's top block, fromRGB to skip, stays as pretrained);
- mapping: finetune with `--freeze-g-mapping` (W stays the pretrained latent space);
- recipe: the documented small-data recipe (docs/fine-tuning.md: finetune, --freeze-d 4, ADA fast enough to act
  within a short run).

Training runs in child processes (benchmarks/quality_digits.py's `train_for`); each budget continues the run of the
one before. The budgets are minutes of this machine at the rate the pretraining ran (images per second), turned into
a length in images that every variant trains to, so that another load on the machine later does not favour one
variant (the variants cost about the same per image: the same networks and batch); each row also gives the wall
time a variant took.

    .venv/bin/python benchmarks/transfer_digits.py --out /tmp/transfer [--pretrain 8] [--budgets 2,5] [--fakes 1000]
    .venv/bin/python benchmarks/transfer_digits.py --out /tmp/transfer --pretrain-kimg 17.2 --lengths 4.304,10.704
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ganforge import checkpoint
from ganforge.demo import write_digit_pngs
from quality_digits import measure, train_for

SMALL = 100  # images of the digits 5-9 to fine-tune on
BATCH = 16  # the tiny preset's
COMMON = {"preset": "tiny", "workers": 0, "device": "cpu", "snap": 1000, "kimg": 1000.0}
RECIPE = {"freeze_d": 4, "ada_kimg": 20.0}


def variants(pretrained: str) -> dict[str, dict]:
    start = {"resume": pretrained}
    return {
        "scratch": {},
        "finetune": start,
        "freezed": start | {"freeze_d": 4},
        "mapping": start | {"freeze_g_mapping": True},
        "recipe": start | RECIPE,
    }


def build_splits(out: Path) -> dict[str, Path]:
    """digits 0-4 (all), digits 5-9 (all: the reference), the first SMALL of the digits 5-9 by scan order."""
    with tempfile.TemporaryDirectory() as tmp:
        scans = Path(tmp) / "all"
        scans.mkdir()
        write_digit_pngs(scans)
        late = sorted(p for p in scans.iterdir() if int(p.stem.split("-")[1]) >= 5)
        parts = {
            "digits04": [p for p in sorted(scans.iterdir()) if int(p.stem.split("-")[1]) < 5],
            "digits59": late,
            "digits59small": late[:SMALL],
        }
        made = {}
        for name, files in parts.items():
            folder = Path(tmp) / name
            folder.mkdir()
            for file in files:
                shutil.copy(file, folder / file.name)
            made[name] = out / f"{name}.zip"
            if not made[name].exists():
                command = [sys.executable, "-m", "ganforge", "dataset", "build", str(folder), str(made[name]),
                           "--transform", "none", "--channels", "1"]  # fmt: skip
                subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return made


def pretrain(data: Path, out: Path, minutes: float, kimg: float | None, seed: int) -> tuple[str, float]:
    """Train on the digits 0-4 for `minutes` (or to `kimg`); -> (the run folder, which `--resume` fine-tunes from: its
    newest checkpoint's G, G_ema, D and ADA's p, since the run's data differs; the kimg it trained per second)."""
    options = {**COMMON, "data": str(data), "outdir": str(out / "pretrain"), "seed": seed}
    wall, _ = train_for(options | ({} if kimg is None else {"kimg": kimg}), None if kimg else minutes * 60)
    (run_dir,) = (out / "pretrain").iterdir()
    kimg = checkpoint.load_latest(run_dir / "checkpoints")["loop"]["cur_nimg"] / 1000
    print(json.dumps({"pretrain_s": round(wall), "pretrain_kimg": kimg}), flush=True)
    return str(run_dir), kimg / wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--pretrain", type=float, default=8.0, help="minutes of pretraining on the digits 0-4")
    parser.add_argument("--budgets", default="2,5", help="cumulative minutes of training on the 100 images")
    parser.add_argument("--pretrain-kimg", type=float, help="pretrain to this length instead of for --pretrain minutes")
    parser.add_argument(
        "--lengths",
        help="cumulative kimg on the 100 images instead of --budgets (to repeat a run of another day at its lengths, "
        "whatever this machine's speed now)",
    )
    parser.add_argument("--fakes", type=int, default=1000, help="fakes per KID measurement")
    parser.add_argument("--variants", default="scratch,finetune,freezed,mapping,recipe")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    data = build_splits(args.out)
    pretrained, rate = pretrain(data["digits04"], args.out, args.pretrain, args.pretrain_kimg, args.seed)
    lengths = [float(k) for k in args.lengths.split(",")] if args.lengths else None
    budgets = [None] * len(lengths) if lengths else [float(b) for b in args.budgets.split(",")]
    table = variants(pretrained)
    rows = []
    for name in args.variants.split(","):
        options = {**COMMON, "data": str(data["digits59small"]), "outdir": str(args.out / name), "seed": args.seed,
                   **table[name]}  # fmt: skip
        trained = 0.0
        for i, budget in enumerate(budgets):
            kimg = lengths[i] if lengths else max(round(rate * budget * 60 * 1000 / BATCH), 1) * BATCH / 1000
            wall, _ = train_for({**options, "kimg": kimg}, None)
            trained += wall
            row = {"variant": name, "budget_min": budget, "trained_s": round(trained),
                   **measure(options, data["digits59"], None, args.fakes)}  # fmt: skip
            print(json.dumps(row), flush=True)
            rows.append(row)
    print("\n| variant | minutes | kimg | wall s | KID x1e3 | SWD |\n| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        minutes = "-" if r["budget_min"] is None else f"{r['budget_min']:g}"
        print(f"| {r['variant']} | {minutes} | {r['kimg']:.2f} | {r['trained_s']} | {r['kid'] * 1e3:.1f} "
              f"| {r['swd']:.2f} |")  # fmt: skip
    print(f"load average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
