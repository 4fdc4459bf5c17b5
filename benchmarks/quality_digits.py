"""Quality per compute on the demo's digits (1,797 scans at 32x32, `python -m ganforge.demo digits`): the `tiny` preset
as it is, with each training control, G and D layout, self-attention and growing, and the `tiny-r3gan` preset (variant
`r3gan`), trained for fixed wall-clock budgets and measured with KID (the standard Inception features) and SWD after
each budget, by default on every real and 2,000 fakes. `--at-kimg` measures at equal images instead of equal time
(each run trains to the next length and stops there), which is how the `fp32` and `bf16` variants are compared (does
bf16 hurt quality?); `--seeds` repeats every variant with other seeds, since one run's KID moves by about as much as
the differences between controls.

Each variant trains in a child process (`ganforge.train.main` with TrainOptions: the flags' names, `preset` for --cfg)
that is stopped with SIGTERM when its budget is spent: the run writes a checkpoint and exits, the budget's G_ema is
read from that checkpoint and measured, and the next budget continues the run (rerunning the same options resumes
it bitwise). Budgets are cumulative training wall time, process start-up included; measuring is not counted.
Wall-clock numbers depend on the machine's load: run it alone, and report the load next to the table; the CPU
seconds the training processes used are printed too. On a CPU the generator and the Inception network are the slow
part (a few images per second on 2 busy cores): `--reals`/`--fakes` measure on fewer images for a quick look.

    .venv/bin/python benchmarks/quality_digits.py --out /tmp/quality [--budgets 1,2,4] [--variants tiny,diffaug,...]
    .venv/bin/python benchmarks/quality_digits.py --out /tmp/bf16 --at-kimg 8,16,24 --variants fp32,bf16 --seeds 0,1
"""

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import torch

from ganforge import checkpoint
from ganforge.demo import build_digits
from ganforge.metrics import compute_metrics
from ganforge.train import TrainOptions, resolve
from ganforge.train.build import build_networks
from ganforge.train.growing import trained_stage

CHILD = (
    "import json, sys; from ganforge.train import TrainOptions, main; "
    "sys.exit(main(TrainOptions(**json.loads(sys.argv[1]))))"
)
# What each variant adds to the tiny preset. `cosine` decays to a tenth over the kimg the baseline reached.
VARIANTS = {
    "tiny": {},
    "diffaug": {"aug": "diffaug"},
    "clip": {"clip_grad": 1.0},
    "cosine": {"lr_schedule": "cosine", "lr_min_ratio": 0.1},
    "dwarmup": {"d_warmup_kimg": 0.4},
    "noaug": {"aug": "noaug"},
    "ada500": {"ada_kimg": 500.0},  # the paper's ADA speed, the tiny row's before it moved p within its 40 kimg
    "fp32": {"precision": "fp32"},
    "bf16": {"precision": "bf16"},
    "r3gan": {"preset": "tiny-r3gan"},  # R3GAN (Huang et al. 2024) against StyleGAN2's tiny: another family, same data
    "r3gan-gamma0.5": {"preset": "tiny-r3gan", "gamma": 0.5},  # the preset's gamma (0.05) x10 and /10, both annealed
    "r3gan-gamma0.005": {"preset": "tiny-r3gan", "gamma": 0.005},  # to a tenth as the preset's
    "r3gan-narrow": {"preset": "tiny-r3gan", "cbase": 512},  # half the widths at 16 and 32 px (32, 16)
    "r3gan-wide": {"preset": "tiny-r3gan", "cbase": 2048, "cmax": 128},  # twice the widths in every stage
    # StyleGAN2's layouts (Sec. 4.1, Fig. 7; tiny is skip G, resnet D) and self-attention (SAGAN) at 16x16
    "resnet": {"g_arch": "resnet"},  # resnet G and D
    "orig": {"g_arch": "orig", "d_arch": "orig"},  # neither skips nor residuals
    "attention": {"g_attn": "16", "d_attn": "16"},
    # Progressive growing (ProGAN) from 8 px, 3 kimg per stage and per fade: fully grown at 12 kimg, about a third of
    # what tiny reaches in 5 minutes (ProGAN's 600 kimg scaled to a CPU run's length)
    "grow": {"grow": True, "grow_kimg": 3.0},
}


def _children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def train_for(options: dict, seconds: float | None) -> tuple[float, float]:
    """Run (or resume) training for `seconds` of wall time, then stop it with SIGTERM (None: until its --kimg);
    -> (wall seconds it really ran, CPU seconds it used)."""
    start, cpu_start = time.monotonic(), _children_cpu_seconds()
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2")}
    proc = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(options)], env=env, stdout=subprocess.DEVNULL)
    try:
        proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)
        proc.wait()
    assert proc.returncode in (0, 143), f"training exited with {proc.returncode}"
    return time.monotonic() - start, _children_cpu_seconds() - cpu_start


def measure(options: dict, data: Path, reals: int | None, fakes: int) -> dict:
    """KID and SWD of the newest checkpoint's G_ema, and the kimg it reached."""
    cfg = resolve(TrainOptions(**options))
    (run_dir,) = Path(options["outdir"]).iterdir()
    state = checkpoint.load_latest(run_dir / "checkpoints")
    G, _ = build_networks(cfg, torch.device("cpu"))
    G.load_state_dict(state["G_ema"])
    if cfg.model.grow:  # measured as it was last trained (while growing: the stage's images, upsampled)
        G.set_stage(list(trained_stage(cfg, state["loop"]["cur_nimg"])))
    G.eval().requires_grad_(False)
    records = compute_metrics(["kid50k_full", "swd16k"], generator=G, real=str(data), progress=False, seed=0,
                              device=torch.device("cpu"), num_gen=fakes, num_real=reals, batch_size=50)  # fmt: skip
    results = {k: v for record in records for k, v in record["results"].items()}
    return {"kimg": state["loop"]["cur_nimg"] / 1000, "kid": results["kid50k_full"], "swd": results["swd16k_avg"]}


def run_variant(name: str, extra: dict, data: Path, args, kimg: float, seed: int) -> list[dict]:
    options = {"data": str(data), "outdir": str(args.out / f"{name}-seed{seed}"), "preset": "tiny", "kimg": kimg,
               "workers": 0, "device": "cpu", "snap": 1000, "seed": seed, **extra}  # fmt: skip
    rows, trained, cpu = [], 0.0, 0.0
    for budget in args.at_kimg or args.budgets:
        if args.at_kimg:  # the run stops at this length; the next length resumes it
            wall, used = train_for({**options, "kimg": budget}, None)
        else:
            wall, used = train_for(options, budget * 60 - trained)
        trained, cpu = trained + wall, cpu + used
        row = {"variant": name, "seed": seed, "budget": budget, "trained_s": round(trained, 1), "cpu_s": round(cpu, 1),
               **measure(options, data, args.reals, args.fakes)}  # fmt: skip
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--budgets", default="1,2,4", help="cumulative minutes of training")
    parser.add_argument("--at-kimg", default=None, help="measure at these lengths in kimg instead of --budgets")
    parser.add_argument("--seeds", default="0", help="train every variant once per seed")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--kimg", type=float, default=40.0, help="run length (longer than the budgets reach)")
    parser.add_argument("--reals", type=int, default=None, help="reals to compare with (default: all 1,797)")
    parser.add_argument("--fakes", type=int, default=2000, help="fakes per measurement")
    args = parser.parse_args()
    args.budgets = [float(b) for b in args.budgets.split(",")]
    args.at_kimg = [float(k) for k in args.at_kimg.split(",")] if args.at_kimg else None
    data = args.out / "digits.zip"
    build_digits(data)
    rows, reached = [], None
    for seed in (int(s) for s in args.seeds.split(",")):
        for name in args.variants.split(","):
            extra, kimg = VARIANTS[name], args.kimg
            if name == "cosine":
                assert reached is not None, "run the tiny variant first: cosine decays over the kimg it reached"
                kimg = max(round(reached * 1000 / 16), 1) * 16 / 1000  # whole batches of tiny's 16
            rows += run_variant(name, extra, data, args, kimg, seed)
            if name == "tiny":
                reached = rows[-1]["kimg"]
    unit = "kimg" if args.at_kimg else "m"
    print(f"\n{'variant':<10}{'seed':>5}{'budget':>11}{'wall s':>8}{'CPU s':>8}{'kimg':>7}{'KID x1e3':>10}{'SWD':>8}")
    for r in rows:
        print(f"{r['variant']:<10}{r['seed']:>5}{r['budget']:>7g} {unit:<4}{r['trained_s']:>8.0f}{r['cpu_s']:>8.0f}"
              f"{r['kimg']:>7.2f}{r['kid'] * 1e3:>10.1f}{r['swd']:>8.2f}")  # fmt: skip
    print(f"load average at the end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
