"""Does a sweep pay on small data? On the demo's digits (1,797 scans at 32x32, `python -m ganforge.demo digits`), a
`ganforge sweep` of the `tiny` preset with a fixed total budget of images (--trials trials of budget / trials kimg
each; pruned trials stop earlier and leave budget unspent) against the `tiny` preset's defaults trained for the whole
budget in one run. Both are measured the same way: --metric at every snapshot on --metrics-gen fakes and every real;
the sweep's figure is its best trial's last measurement, the default's its run's last. Prints both, what the sweep
chose as a ready `ganforge train` command, the trials' states and the wall time of each side.

A full run trains budget x 2 kimg on the CPU (about an hour per 100 kimg on 2 cores, more while the machine is busy):
run it alone and give the load with the table. `--smoke` is a seconds-long check that the script works (tiny
budgets, SWD on 16 fakes), not a figure.

    .venv/bin/python benchmarks/sweep_digits.py --out /tmp/sweep-digits [--budget 200] [--trials 8]
    .venv/bin/python benchmarks/sweep_digits.py --out /tmp/sweep-digits-smoke --smoke
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from ganforge.demo import build_digits
from ganforge.sweep.measure import measurements
from ganforge.sweep.trial import run_folder

# What every run here shares with the demo (`make demo` trains tiny on the digits with its defaults).
COMMON = ["--cfg", "tiny", "--device", "cpu"]
SMOKE = {"budget": 0.064, "trials": 2, "metric": "swd16k", "metrics_gen": 16, "snapshot_space": ("batch=16",
         "tick=0.016", "snap=1", "workers=0")}  # fmt: skip


def run(words: list[str], log: Path) -> float:
    """Run `ganforge WORDS`, its output to `log`; the wall seconds it took. Exits on a failure, naming the log."""
    start = time.monotonic()
    with open(log, "w") as out:
        status = subprocess.run([sys.executable, "-m", "ganforge", *words], stdout=out, stderr=subprocess.STDOUT)
    if status.returncode != 0:
        sys.exit(f"`ganforge {' '.join(words[:1])}` failed (exit status {status.returncode}): see {log}")
    return time.monotonic() - start


def baseline(args, data: Path, extra: list[str]) -> tuple[float, float]:
    """The tiny preset's defaults trained for the whole budget: (its last measurement, wall seconds)."""
    outdir = args.out / "default"
    words = ["train", "--data", str(data), "--outdir", str(outdir), *COMMON, "--kimg", f"{args.budget:g}",
             "--metrics", args.metric, "--metrics-gen", str(args.metrics_gen), "--no-report", *extra]  # fmt: skip
    seconds = run(words, args.out / "default.log")
    found = measurements(run_folder(outdir), args.metric)
    return found[-1][1], seconds


def sweep(args, data: Path, space: list[str]) -> tuple[dict, float]:
    """The sweep at budget / trials kimg per trial: (its study.json, wall seconds)."""
    outdir = args.out / "sweep"
    words = ["sweep", "--data", str(data), "--outdir", str(outdir), *COMMON, "--kimg", f"{args.budget / args.trials:g}",
             "--trials", str(args.trials), "--metric", args.metric, "--metrics-gen", str(args.metrics_gen),
             "--parallel", str(args.parallel), *[w for entry in space for w in ("--space", entry)]]  # fmt: skip
    seconds = run(words, args.out / "sweep.log")
    return json.loads((outdir / "study.json").read_text()), seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="Folder for the dataset, the runs and the logs.")
    parser.add_argument("--budget", type=float, default=200.0, help="Total kimg of each side.")
    parser.add_argument("--trials", type=int, default=8)
    parser.add_argument("--metric", default="kid50k_full")
    parser.add_argument("--metrics-gen", type=int, default=2000, help="Fakes per measurement.")
    parser.add_argument("--parallel", type=int, default=1)
    parser.add_argument("--space", action="append", default=[], help="Extra --space entries (the family's default "
                        "space applies: gamma, aug, target, glr, dlr, mirror).")  # fmt: skip
    parser.add_argument("--smoke", action="store_true", help="Seconds-long check of the script, not a figure.")
    args = parser.parse_args()
    fixed: list[str] = []
    if args.smoke:
        args.budget, args.trials, args.metric, args.metrics_gen = (SMOKE[k] for k in ("budget", "trials", "metric",
                                                                                      "metrics_gen"))  # fmt: skip
        fixed = list(SMOKE["snapshot_space"])
    args.out.mkdir(parents=True, exist_ok=True)
    data = args.out / "digits.zip"
    if not data.exists():
        build_digits(data)
    extra = [w for entry in fixed for name, value in [entry.split("=", 1)] for w in (f"--{name}", value)]
    default_value, default_s = baseline(args, data, extra)
    study, sweep_s = sweep(args, data, [*fixed, *args.space])
    states = {}
    for trial in study["trials"]:
        states[trial["state"]] = states.get(trial["state"], 0) + 1
    best = study["best"]
    print(f"machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; budget {args.budget:g} kimg each side")
    print(f"{'':24}{args.metric:>14}{'wall s':>10}")
    print(f"{'tiny defaults':24}{default_value:>14.5g}{default_s:>10.0f}")
    sweep_value = float("nan") if best is None else best["value"]
    print(f"{f'sweep ({args.trials} trials)':24}{sweep_value:>14.5g}{sweep_s:>10.0f}")
    print("trials: " + ", ".join(f"{n} {state}" for state, n in sorted(states.items())))
    print("the sweep chose: " + ("no trial finished" if best is None else best["command"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
