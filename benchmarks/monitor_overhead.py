"""What watching a run costs: median seconds per tiny CPU training step with the monitor off, and on (sampler thread
every INTERVAL seconds plus the timed step sections), in interleaved rounds so that load on a shared machine hits
both alike. Prints both medians and their ratio (on / off).

    .venv/bin/python benchmarks/monitor_overhead.py                      # default 2 s interval, 8 rounds of 10 steps
    .venv/bin/python benchmarks/monitor_overhead.py --interval 0.05      # a sampler 40x more eager than the default

CPU time of the process is reported beside wall time: it includes the sampler thread's own reads.
"""

import argparse
import resource
import statistics
import time

import torch

from ganforge.monitor.telemetry import Monitor
from ganforge.train.build import build
from ganforge.train.options import TrainOptions
from ganforge.train.phases import micro_batches, run_phase
from ganforge.train.resolver import DatasetFacts, Facts, resolve
from ganforge.train.schedules import plan_step, update_ema


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _round(cfg, t, phases, G_ema, images, labels, steps: int, start_nimg: int) -> tuple[list[float], float]:
    """`steps` training steps of the real phase code under a Monitor for `cfg`: (wall seconds per step, CPU s)."""
    times, cpu_start, s = [], _cpu_seconds(), cfg.schedule
    with Monitor(cfg, torch.device("cpu"), None, start_nimg, print) as monitor:
        t.probe = monitor.probe
        for k in range(steps):
            nimg = start_nimg + k * s.batch
            begin = time.perf_counter()
            with monitor.step(nimg):
                plan = plan_step(cfg, nimg, phases)
                for index, (phase, due) in enumerate(zip(phases, plan.due, strict=True)):
                    if due:
                        run_phase(t, phase, index, plan, micro_batches(cfg, plan, index, images, labels, t.G.num_ws))
                update_ema(G_ema, t.G, plan.ema_beta)
            times.append(time.perf_counter() - begin)
        monitor.tick({})
    return times, _cpu_seconds() - cpu_start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interval", type=float, default=2.0, help="sampler interval in seconds when on")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--steps", type=int, default=10, help="steps per round")
    args = parser.parse_args()
    facts = Facts(DatasetFacts(16, 3, 0, "bench"), 1, "cpu")
    options = dict(data="bench", outdir="bench", preset="tiny", batch=8, aug="noaug", device="cpu")
    configs = {
        "off": resolve(TrainOptions(**options, monitor_interval=0), facts),
        "on": resolve(TrainOptions(**options, monitor_interval=args.interval), facts),
    }
    t, phases, G_ema = build(configs["off"], torch.device("cpu"))
    images, labels = torch.rand([8, 3, 16, 16]) * 2 - 1, torch.zeros([8, 0])
    _round(configs["off"], t, phases, G_ema, images, labels, 2, 0)  # warm-up
    wall, cpu = {name: [] for name in configs}, dict.fromkeys(configs, 0.0)
    for index in range(args.rounds):
        order = list(configs) if index % 2 == 0 else list(reversed(configs))
        for name in order:
            # every round replays the same image positions, so both sides run the same mix of lazy R1/PL steps
            times, cpu_seconds = _round(configs[name], t, phases, G_ema, images, labels, args.steps, 16)
            wall[name] += times
            cpu[name] += cpu_seconds
    off, on = statistics.median(wall["off"]), statistics.median(wall["on"])
    steps = args.rounds * args.steps
    print(
        f"tiny 16 px CPU, batch 8, {args.rounds} interleaved rounds x {args.steps} steps, interval {args.interval:g} s"
    )
    print(f"median s/step  off {off:.4f}  on {on:.4f}  ratio on/off {on / off:.4f}")
    print(f"CPU s/step     off {cpu['off'] / steps:.4f}  on {cpu['on'] / steps:.4f}  "
          f"ratio on/off {cpu['on'] / cpu['off']:.4f}")  # fmt: skip


if __name__ == "__main__":
    main()
