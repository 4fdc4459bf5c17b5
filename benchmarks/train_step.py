"""Median seconds per training iteration of the real phase code (G main + D main; and with D R1 added), batch 8.

    .venv/bin/python benchmarks/train_step.py                    # auto and tiny presets at 32 and 64 px, CPU
    .venv/bin/python benchmarks/train_step.py --cfg tiny --res 32 --iters 20

Wall and CPU seconds are both reported (CPU time moves less with other load on a shared machine). Each (preset,
resolution) runs in a fresh process so its peak memory (CUDA allocator peak, or peak RSS on CPU) is its
own. The baseline is the plain iteration; "+R1" adds the lazy R1 phase every step (the worst case; in training it runs
every 16th step).
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import torch

from ganforge.train.build import build
from ganforge.train.logs import peak_memory_gb
from ganforge.train.options import TrainOptions
from ganforge.train.phases import micro_batches, run_phase
from ganforge.train.resolver import DatasetFacts, Facts, resolve


def measure(cfg_name: str, res: int, iters: int, batch: int, device: str) -> dict:
    one_step = batch / 1000
    options = TrainOptions(data="bench", outdir="bench", preset=cfg_name, batch=batch, aug="noaug", kimg=one_step,
                           tick=one_step, device=device)  # fmt: skip
    dev = torch.device(device)
    cfg = resolve(options, Facts(DatasetFacts(res, 3, 0, "bench"), 1, dev.type))
    t, phases, _ = build(cfg, dev)
    by_name = {p.name: (i, p) for i, p in enumerate(phases)}
    images = torch.rand([batch, 3, res, res], device=dev) * 2 - 1
    labels = torch.zeros([batch, 0], device=dev)

    def iteration(names):
        for name in names:
            index, phase = by_name[name]
            run_phase(t, phase, index, 0, micro_batches(cfg, index, 0, images, labels, t.G.num_ws))
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    result = {"cfg": cfg_name, "res": res, "batch": batch, "device": device,
              "G_params": sum(p.numel() for p in t.G.parameters()),
              "D_params": sum(p.numel() for p in t.D.parameters())}  # fmt: skip
    for label, names in (("main", ["G_main", "D_main"]), ("main+R1", ["G_main", "D_main", "D_reg"])):
        iteration(names)  # warm-up
        times, cpu_times = [], []
        for _ in range(iters):
            start, cpu_start = time.perf_counter(), _cpu_seconds()
            iteration(names)
            times.append(time.perf_counter() - start)
            cpu_times.append(_cpu_seconds() - cpu_start)
        result[f"s_per_iter_{label}"] = statistics.median(times)
        result[f"cpu_s_per_iter_{label}"] = statistics.median(cpu_times)
    result["peak_memory_gb"] = peak_memory_gb(dev)
    return result


def _cpu_seconds() -> float:
    """CPU time of this process (all threads): on a shared machine it moves less with the load than wall time."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cfg", nargs="+", default=["auto", "tiny"])
    parser.add_argument("--res", nargs="+", type=int, default=[32, 64])
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # internal: one config, JSON out
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.cfg[0], args.res[0], args.iters, args.batch, args.device)))
        return
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, device {args.device}, batch {args.batch}, "
          f"load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    print(f"{'cfg':<6} {'res':>4} {'G params':>10} {'D params':>10} {'s/iter':>8} {'+R1':>8} {'cpu s/iter':>10} "
          f"{'+R1':>8} {'peak GB':>8}")  # fmt: skip
    for cfg_name in args.cfg:
        for res in args.res:
            command = [sys.executable, __file__, "--one", "--cfg", cfg_name, "--res", str(res), "--iters",
                       str(args.iters), "--batch", str(args.batch), "--device", args.device]  # fmt: skip
            r = json.loads(subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True).stdout)
            print(f"{cfg_name:<6} {res:>4} {r['G_params']:>10,} {r['D_params']:>10,} {r['s_per_iter_main']:>8.3f} "
                  f"{r['s_per_iter_main+R1']:>8.3f} {r['cpu_s_per_iter_main']:>10.3f} "
                  f"{r['cpu_s_per_iter_main+R1']:>8.3f} {r['peak_memory_gb']:>8.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
