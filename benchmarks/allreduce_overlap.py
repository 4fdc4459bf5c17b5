"""The share of a training phase spent waiting for the gradient all-reduce, over 2 gloo ranks on the CPU: one flat
all-reduce after backward against bucketed all-reduces started during backward (`runtime.allreduce_bucket_mb`).

    python benchmarks/allreduce_overlap.py [--cfg auto] [--res 32] [--batch 8] [--rounds 3] [--bucket-mb 4]

Each rank builds both trainers (same weights) and runs G main and D main with each, interleaved round by round
(A B B A ...), so both see the same machine load. "wait" is the time from the end of backward to the summed
gradients (GradientSync.finish): the communication that did not overlap computation. Medians over rounds, rank 0.
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time

import torch

from ganforge import dist
from ganforge.train.build import build
from ganforge.train.options import TrainOptions
from ganforge.train.phases import micro_batches, run_phase
from ganforge.train.resolver import DatasetFacts, Facts, resolve
from ganforge.train.schedules import plan_step

PHASES = ("G_main", "D_main")


def trainer(args, bucket_mb: float):
    options = TrainOptions(data="bench", outdir="bench", preset=args.cfg, batch=args.batch, aug="noaug",
                           device="cpu", allreduce_bucket_mb=bucket_mb)  # fmt: skip
    cfg = resolve(options, Facts(DatasetFacts(args.res, 3, 0, "bench"), dist.world_size(), "cpu"))
    t, phases, _ = build(cfg, torch.device("cpu"))
    waits = []
    for sync in {id(p.network): p.network.sync for p in phases}.values():  # the phases of a network share its sync
        finish = sync.finish

        def timed(finish=finish):
            start = time.perf_counter()
            finish()
            waits.append(time.perf_counter() - start)

        sync.finish = timed
    return cfg, t, {p.name: (i, p) for i, p in enumerate(phases)}, waits


def run_rank(args) -> None:
    torch.set_num_threads(args.threads)
    dist.init("cpu")
    images = torch.rand([args.batch // dist.world_size(), 3, args.res, args.res]) * 2 - 1
    labels = torch.zeros([len(images), 0])
    setups = {"flat": trainer(args, 0.0), "overlapped": trainer(args, args.bucket_mb)}
    times = {label: {name: {"step": [], "wait": []} for name in PHASES} for label in setups}
    for r in range(args.rounds + 1):  # round 0 warms up
        for label in list(setups)[:: 1 if r % 2 == 0 else -1]:
            cfg, t, by_name, waits = setups[label]
            for name in PHASES:
                index, phase = by_name[name]
                plan = plan_step(cfg, 0, [phase for _, phase in by_name.values()])
                start = time.perf_counter()
                run_phase(t, phase, index, plan, micro_batches(cfg, plan, index, images, labels, t.G.num_ws))
                if r > 0:
                    times[label][name]["step"].append(time.perf_counter() - start)
                    times[label][name]["wait"].append(waits[-1])
    if dist.is_main():
        print(json.dumps(times))
    dist.barrier()
    dist.shutdown()


def report(times: dict, args) -> None:
    print(f"2 gloo ranks on CPU, {args.threads} thread(s) each, cfg {args.cfg} {args.res}px, batch {args.batch}, "
          f"buckets of {args.bucket_mb} MiB, medians of {args.rounds} interleaved rounds")  # fmt: skip
    for name in PHASES:
        for label in ("flat", "overlapped"):
            step = statistics.median(times[label][name]["step"])
            wait = statistics.median(times[label][name]["wait"])
            share = 100 * wait / step
            print(f"{name:<7} {label:<10} step {step:7.3f} s   all-reduce wait {wait:6.3f} s ({share:4.1f}%)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cfg", default="auto")
    parser.add_argument("--res", type=int, default=32)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bucket-mb", type=float, default=4.0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rank", action="store_true", help=argparse.SUPPRESS)  # internal: run as one rank
    args = parser.parse_args()
    if args.rank:
        run_rank(args)
        return
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = dict(os.environ, WORLD_SIZE="2", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    ranks = [subprocess.Popen([sys.executable, __file__, "--rank", *sys.argv[1:]], stdout=subprocess.PIPE, text=True,
                              env=dict(env, RANK=str(r), LOCAL_RANK=str(r))) for r in range(2)]  # fmt: skip
    outputs = [rank.communicate()[0] for rank in ranks]
    assert all(rank.returncode == 0 for rank in ranks), "a rank failed"
    report(json.loads(outputs[0].strip().splitlines()[-1]), args)


if __name__ == "__main__":
    main()
