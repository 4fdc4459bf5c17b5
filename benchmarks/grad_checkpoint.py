"""Peak memory saved and time lost by --grad-checkpoint: one training iteration of the real phase code (G main +
D main; --phases adds the regularisers), with and without recomputing the blocks' activations in backward.

    .venv/bin/python benchmarks/grad_checkpoint.py                          # paper256-like at 256x256, batch 2, CPU
    .venv/bin/python benchmarks/grad_checkpoint.py --cbase 16384            # the paper's widths (4x the compute)
    .venv/bin/python benchmarks/grad_checkpoint.py --batch 4 --rounds 3 --phases G_main D_main D_reg
    .venv/bin/python benchmarks/grad_checkpoint.py --device cuda --batch 32

Each measurement runs in a fresh process, so its peak (resident set size on CPU, the CUDA allocator's peak on a GPU)
is its own. The default channel base is half paper256's (every layer half as wide: about a quarter of the compute,
half the activations), so that two rounds take a few minutes on 2 CPU cores. Rounds alternate the two settings
(A B B A ...) so both see the same machine load. "activations" is the peak minus the memory held once the networks,
optimisers and inputs exist (before the first step); an allocator's peak also holds temporaries and cached blocks, so
"saved" gives, per phase, the bytes autograd keeps from forward to backward (distinct storages, parameters included),
which is what recomputation removes.
"""

import argparse
import dataclasses
import json
import os
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
from ganforge.train.schedules import plan_step


def current_memory_gb(device: torch.device) -> float:
    """Memory held now: CUDA allocated bytes, or the resident set size on CPU (Linux /proc)."""
    if device.type == "cuda":
        return torch.cuda.memory_allocated(device) / 2**30
    with open("/proc/self/status") as status:
        kib = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))
    return kib / 2**20


def saved_for_backward_gb(step) -> float:
    """Bytes of the distinct storages autograd saves for backward while `step` runs (outside recomputed blocks, whose
    own saved tensors are dropped until backward recomputes them)."""
    storages = {}

    def pack(tensor):
        storages[tensor.untyped_storage().data_ptr()] = tensor.untyped_storage().nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        step()
    return sum(storages.values()) / 2**30


def measure(args, grad_checkpoint: bool) -> dict:
    """One process, one setting: seconds per iteration (median of --iters after a warm-up) and memory."""
    dev = torch.device(args.device)
    one_step = args.batch / 1000
    options = TrainOptions(data="bench", outdir="bench", preset=args.cfg, batch=args.batch, aug="noaug",
                           kimg=one_step, tick=one_step, device=args.device,
                           grad_checkpoint=grad_checkpoint)  # fmt: skip
    cfg = resolve(options, Facts(DatasetFacts(args.res, 3, 0, "bench"), 1, dev.type))
    cfg = dataclasses.replace(cfg, model=dataclasses.replace(cfg.model, channel_base=args.cbase))
    t, phases, _ = build(cfg, dev)
    by_name, plan = {p.name: (i, p) for i, p in enumerate(phases)}, plan_step(cfg, 0, phases)
    images = torch.rand([args.batch, 3, args.res, args.res], device=dev) * 2 - 1
    labels = torch.zeros([args.batch, 0], device=dev)

    def step(name):
        index, phase = by_name[name]
        run_phase(t, phase, index, plan, micro_batches(cfg, plan, index, images, labels, t.G.num_ws))
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)

    def iteration():
        for name in args.phases:
            step(name)

    held = current_memory_gb(dev)
    iteration()  # warm-up: allocator and thread pools
    times = []
    for _ in range(args.iters):
        start = time.perf_counter()
        iteration()
        times.append(time.perf_counter() - start)
    peak = peak_memory_gb(dev)
    saved = {f"saved_{name}_gb": saved_for_backward_gb(lambda name=name: step(name)) for name in args.phases}
    return {"s_per_iter": statistics.median(times), "peak_gb": peak, "activations_gb": peak - held, **saved}


def child(args, grad_checkpoint: bool) -> dict:
    command = [sys.executable, __file__, "--one", "--cfg", args.cfg, "--res", str(args.res), "--batch",
               str(args.batch), "--cbase", str(args.cbase), "--iters", str(args.iters), "--device", args.device,
               "--threads", str(args.threads), "--phases", *args.phases]  # fmt: skip
    command += ["--grad-checkpoint"] if grad_checkpoint else []
    return json.loads(subprocess.run(command, check=True, stdout=subprocess.PIPE, text=True).stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cfg", default="paper256")
    parser.add_argument("--res", type=int, default=256)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--cbase", type=int, default=8192, help="channel base (paper256: 16384)")
    parser.add_argument("--iters", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2, help="processes per setting, interleaved")
    parser.add_argument("--phases", nargs="+", default=["G_main", "D_main"])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--grad-checkpoint", action="store_true", help=argparse.SUPPRESS)  # internal, with --one
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)  # internal: one setting, JSON out
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.one:
        print(json.dumps(measure(args, args.grad_checkpoint)))
        return
    print(f"torch {torch.__version__}, {args.threads} threads, device {args.device}, cfg {args.cfg} at "
          f"{args.res}x{args.res}, channel base {args.cbase}, batch {args.batch}, phases {' + '.join(args.phases)}, "
          f"{args.rounds} interleaved rounds of {args.iters} iterations, "
          f"load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    results = {False: [], True: []}
    for r in range(args.rounds):
        for setting in (False, True) if r % 2 == 0 else (True, False):
            results[setting].append(child(args, setting))
    saved_keys = [f"saved_{name}_gb" for name in args.phases]
    print(f"{'setting':<17} {'s/iter':>7} {'range':>13} {'peak GB':>8} {'activations GB':>15} "
          + " ".join(f"{'saved ' + name + ' GB':>18}" for name in args.phases))  # fmt: skip
    for setting, label in ((False, "stored"), (True, "--grad-checkpoint")):
        runs = results[setting]
        s = [run["s_per_iter"] for run in runs]
        peak, act, *saved = (statistics.median(run[key] for run in runs) for key in ("peak_gb", "activations_gb",
                                                                                      *saved_keys))  # fmt: skip
        print(f"{label:<17} {statistics.median(s):>7.2f} {min(s):>6.2f}-{max(s):<6.2f} {peak:>8.2f} {act:>15.2f} "
              + " ".join(f"{gb:>18.3f}" for gb in saved))  # fmt: skip
    off, on = ({key: statistics.median(run[key] for run in results[s]) for key in results[s][0]} for s in results)
    print(f"time x{on['s_per_iter'] / off['s_per_iter']:.2f}, activation memory x"
          f"{on['activations_gb'] / off['activations_gb']:.2f}, peak x{on['peak_gb'] / off['peak_gb']:.2f}; "
          f"load average {os.getloadavg()[0]:.1f} at the end")  # fmt: skip


if __name__ == "__main__":
    main()
