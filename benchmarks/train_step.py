"""Median seconds per training iteration of the real phase code (G main + D main; and with D R1 added), batch 8.

    .venv/bin/python benchmarks/train_step.py                    # auto and tiny presets at 32 and 64 px, CPU
    .venv/bin/python benchmarks/train_step.py --cfg tiny --res 32 --iters 20
    .venv/bin/python benchmarks/train_step.py --baseline main --res 32 64 --rounds 5
    .venv/bin/python benchmarks/train_step.py --channels-last                   # the same in channels_last layout

Wall and CPU seconds are both reported (CPU time moves less with other load on a shared machine). Each (preset,
resolution) runs in a fresh process so its peak memory (CUDA allocator peak, or peak RSS on CPU) is its
own. The baseline is the plain iteration; "+R1" adds the lazy R1 phase every step (the worst case; in training it runs
every 16th step).

With --baseline COMMIT, each round builds the trainer of ganforge as it was at COMMIT (imported as ganforge_baseline,
see baseline.py) and of the working tree, each in a fresh process with the process settings its own `ganforge` command
makes (the C allocator's), with the same configuration, initial weights and images, and times each phase (G main,
D main, D R1) once after a warm-up; the sides take turns in interleaved rounds (A B B A ...), so both see the same
machine load. The figures are medians over the rounds; "iteration" is G main + D main of the same round; "fastest" is
the ratio of the two fastest rounds, the least disturbed, worth reading beside the median when the ranges are wide (a
busy or noisy machine).
"""

import argparse
import dataclasses
import importlib
import importlib.util
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import torch

from ganforge.allocator import keep_freed_memory
from ganforge.train.logs import peak_memory_gb

PHASES = ("G_main", "D_main", "D_reg")


def build(package: str, cfg_name: str, res: int, batch: int, device: str, mapping_layers: int | None,
          channels_last: bool = False, precision: str = "fp32"):  # fmt: skip
    """(config, trainer, phases by name) of ganforge or of the baseline package, for synthetic data. The baseline
    commit must have the options structure of today (train/resolver.py, train/build.py)."""
    options_module = importlib.import_module(f"{package}.train.options")
    resolver = importlib.import_module(f"{package}.train.resolver")
    one_step = batch / 1000
    options = options_module.TrainOptions(data="bench", outdir="bench", preset=cfg_name, batch=batch, aug="noaug",
                                          kimg=one_step, tick=one_step, device=device,
                                          channels_last=channels_last, precision=precision)  # fmt: skip
    dev = torch.device(device)
    cfg = resolver.resolve(options, resolver.Facts(resolver.DatasetFacts(res, 3, 0, "bench"), 1, dev.type))
    if mapping_layers is not None:
        cfg = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, mapping_layers=mapping_layers))
    t, phases, _ = importlib.import_module(f"{package}.train.build").build(cfg, dev)
    return cfg, t, {p.name: (i, p) for i, p in enumerate(phases)}


def phase_runner(package: str, built, images, labels):
    """name -> a function running that phase once on the given images."""
    run_phase = importlib.import_module(f"{package}.train.phases").run_phase
    micro_batches = importlib.import_module(f"{package}.train.phases").micro_batches
    schedules = importlib.import_module(f"{package}.train.schedules")
    cfg, t, by_name = built
    planned = hasattr(schedules, "plan_step")  # a baseline from before the step plan takes the image count
    start = schedules.plan_step(cfg, 0, [phase for _, phase in by_name.values()]) if planned else 0

    def run(name):
        index, phase = by_name[name]
        if planned:
            mbs = micro_batches(cfg, start, index, images, labels, t.G.num_ws)
        else:
            mbs = micro_batches(cfg, index, start, images, labels, t.G.num_ws)
        run_phase(t, phase, index, start, mbs)
        if images.device.type == "cuda":
            torch.cuda.synchronize(images.device)

    return run


def measure(cfg_name: str, res: int, iters: int, batch: int, device: str, channels_last: bool, precision: str) -> dict:
    keep_freed_memory()  # as the `ganforge` command does when it starts
    dev = torch.device(device)
    built = build("ganforge", cfg_name, res, batch, device, None, channels_last, precision)
    _, t, _ = built
    images = torch.rand([batch, 3, res, res], device=dev) * 2 - 1  # as train feeds them: contiguous either way
    run = phase_runner("ganforge", built, images, torch.zeros([batch, 0], device=dev))

    def iteration(names):
        for name in names:
            run(name)

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


def compare(commit: str, cfg_name: str, res: int, rounds: int, batch: int, device: str, mapping_layers,
            precision: str, threads: int) -> dict:  # fmt: skip
    """Per phase, {"baseline"|"current": {"wall"|"cpu": [seconds per round]}}, interleaved A B B A ...

    Each side runs each round in a fresh worker process, one at a time: each has the process settings its own
    `ganforge` command makes as it starts (the C allocator's, ganforge/allocator.py, where the commit has it), and
    neither holds memory while the other runs (on a virtual machine, page faults got 30-50% dearer while another
    process merely held 1-3 GB).
    """
    times = {name: {label: {"wall": [], "cpu": []} for label in ("baseline", "current")} for name in PHASES}
    for r in range(rounds):
        for label in ("baseline", "current")[:: 1 if r % 2 == 0 else -1]:
            command = [sys.executable, __file__, "--serve", label, "--baseline", commit, "--cfg", cfg_name, "--res",
                       str(res), "--batch", str(batch), "--device", device, "--threads", str(threads),
                       "--mapping-layers", str(mapping_layers), "--precision", precision]  # fmt: skip
            measured = json.loads(subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True).stdout)
            for name in PHASES:
                times[name][label]["wall"].append(measured[name][0])
                times[name][label]["cpu"].append(measured[name][1])
    return times


def serve(label: str, commit: str, cfg_name: str, res: int, batch: int, device: str, mapping_layers,
          precision: str) -> dict:  # fmt: skip
    """One side's round of compare(): build, run every phase once to warm up, then {phase: [wall s, CPU s]} of one
    more run each."""
    package = "ganforge"
    if label == "baseline":
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from baseline import import_baseline

        package = import_baseline(commit).__name__
    if importlib.util.find_spec(f"{package}.allocator") is not None:
        importlib.import_module(f"{package}.allocator").keep_freed_memory()
    dev = torch.device(device)
    generator = torch.Generator().manual_seed(0)  # every round of both sides judges the same images
    images = (torch.rand([batch, 3, res, res], generator=generator) * 2 - 1).to(dev)
    built = build(package, cfg_name, res, batch, device, mapping_layers, precision=precision)
    run = phase_runner(package, built, images, torch.zeros([batch, 0], device=dev))
    for name in PHASES:
        run(name)
    measured = {}
    for name in PHASES:
        start, cpu_start = time.perf_counter(), _cpu_seconds()
        run(name)
        measured[name] = [time.perf_counter() - start, _cpu_seconds() - cpu_start]
    return measured


def _cpu_seconds() -> float:
    """CPU time of this process (all threads): on a shared machine it moves less with the load than wall time."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def print_comparison(res: int, times: dict) -> None:
    iteration = {label: {kind: [g + d for g, d in zip(times["G_main"][label][kind], times["D_main"][label][kind],
                                                      strict=True)] for kind in ("wall", "cpu")}
                 for label in ("baseline", "current")}  # fmt: skip
    for name, per_label in [*times.items(), ("iteration", iteration)]:
        b, c = per_label["baseline"], per_label["current"]
        row = [f"{res:>4} {name:<10}"]
        for kind in ("wall", "cpu"):
            mb, mc = statistics.median(b[kind]), statistics.median(c[kind])
            row.append(f"{kind} {mb:7.3f} -> {mc:7.3f} s ({mc / mb:4.2f}x, range {min(c[kind]):.2f}-"
                       f"{max(c[kind]):.2f} vs {min(b[kind]):.2f}-{max(b[kind]):.2f}, "
                       f"fastest {min(c[kind]) / min(b[kind]):4.2f}x)")  # fmt: skip
        print("   ".join(row), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cfg", nargs="+", default=["auto", "tiny"])
    parser.add_argument("--res", nargs="+", type=int, default=[32, 64])
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--baseline", metavar="COMMIT", help="time every phase against ganforge at this commit")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds, with --baseline")
    parser.add_argument("--mapping-layers", type=int, default=8, help="with --baseline (8: the official config)")
    parser.add_argument("--channels-last", action="store_true", help="the networks in channels_last (train's flag)")
    parser.add_argument("--precision", default="fp32", help="train's --precision (fp32: the configuration compared)")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # internal: one config, JSON out
    parser.add_argument("--serve", choices=["baseline", "current"], help=argparse.SUPPRESS)  # internal: compare()
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.serve:
        print(json.dumps(serve(args.serve, args.baseline, args.cfg[0], args.res[0], args.batch, args.device,
                               args.mapping_layers, args.precision)))  # fmt: skip
        return
    if args.one:
        print(json.dumps(measure(args.cfg[0], args.res[0], args.iters, args.batch, args.device, args.channels_last,
                                 args.precision)))  # fmt: skip
        return
    layout = "channels_last" if args.channels_last and not args.baseline else "contiguous"
    print(f"torch {torch.__version__}, {args.threads} threads, device {args.device}, batch {args.batch}, {layout}, "
          f"{args.precision}, load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    if args.baseline:
        print(f"baseline {args.baseline} -> working tree, cfg {args.cfg[0]}, mapping {args.mapping_layers} layers, "
              f"medians of {args.rounds} interleaved rounds, a fresh process each")  # fmt: skip
        for res in args.res:
            print_comparison(res, compare(args.baseline, args.cfg[0], res, args.rounds, args.batch, args.device,
                                          args.mapping_layers, args.precision, args.threads))  # fmt: skip
        print(f"load average {os.getloadavg()[0]:.1f} at the end")
        return
    print(f"{'cfg':<6} {'res':>4} {'G params':>10} {'D params':>10} {'s/iter':>8} {'+R1':>8} {'cpu s/iter':>10} "
          f"{'+R1':>8} {'peak GB':>8}")  # fmt: skip
    for cfg_name in args.cfg:
        for res in args.res:
            r = json.loads(_child(args, cfg_name, res))
            print(f"{cfg_name:<6} {res:>4} {r['G_params']:>10,} {r['D_params']:>10,} {r['s_per_iter_main']:>8.3f} "
                  f"{r['s_per_iter_main+R1']:>8.3f} {r['cpu_s_per_iter_main']:>10.3f} "
                  f"{r['cpu_s_per_iter_main+R1']:>8.3f} {r['peak_memory_gb']:>8.2f}")  # fmt: skip


def _child(args, cfg_name: str, res: int) -> str:
    """Run one (preset, resolution) in a fresh process; its JSON output."""
    command = [sys.executable, __file__, "--one", "--cfg", cfg_name, "--res", str(res), "--iters", str(args.iters),
               "--batch", str(args.batch), "--device", args.device, "--threads", str(args.threads),
               "--precision", args.precision]  # fmt: skip
    if args.channels_last:
        command += ["--channels-last"]
    return subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True).stdout


if __name__ == "__main__":
    main()
