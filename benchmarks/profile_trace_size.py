"""How large `--profile`'s trace is: bytes written for a tiny CPU run's profiled steps, by the profiler as it is
(operator names and times, gzipped), with `detail` (input shapes, memory events and Python stacks, gzipped), and a
baseline measured in the same run with the settings `--profile` used to have (shapes and memory, plain JSON).

    .venv/bin/python benchmarks/profile_trace_size.py                 # tiny preset at 8 px, 5 steps asked
    .venv/bin/python benchmarks/profile_trace_size.py --res 32 --steps 20

The profiler's window starts at step 1 and is extended until R1 (every 16 steps) has run, so it profiles more
steps than asked; the baseline profiles exactly the steps asked. Bytes per profiled step compare the two.
"""

import argparse
import gzip
import tempfile
from pathlib import Path

import torch

from ganforge.monitor.probe import Probe
from ganforge.monitor.profiler import TRACE_NAME, StepProfiler
from ganforge.train.build import build
from ganforge.train.options import TrainOptions
from ganforge.train.phases import micro_batches, run_phase
from ganforge.train.resolver import DatasetFacts, Facts, resolve
from ganforge.train.schedules import plan_step, update_ema

CPU = torch.device("cpu")


def _step(cfg, t, phases, G_ema, images, labels, nimg: int) -> None:
    """One training step of the real phase code, labelled as the loop labels it."""
    plan = plan_step(cfg, nimg, phases)
    for index, (phase, due) in enumerate(zip(phases, plan.due, strict=True)):
        if due:
            with t.probe.label(phase.name.replace("_", " ")):
                run_phase(t, phase, index, plan, micro_batches(cfg, plan, index, images, labels, t.G.num_ws))
    with t.probe.label("EMA"):
        update_ema(G_ema, t.G, plan.ema_beta)


def _profiled(setup, folder: Path, steps: int, detail: bool) -> tuple[int, int, int]:
    """(steps profiled, trace bytes on disk, bytes of its JSON) with the profiler."""
    cfg, t, phases, G_ema, images, labels = setup
    t.probe = Probe()
    intervals = {phase.name.replace("_", " "): phase.interval for phase in phases}
    profiler = StepProfiler(steps, cfg.schedule.batch, folder, CPU, t.probe, lambda line: None, intervals, detail)
    count = 0
    for k in range(1, profiler.limit + 1):  # the window closes by itself within its limit
        with profiler.step(k * cfg.schedule.batch):
            count += t.probe.profiling
            _step(*setup, k * cfg.schedule.batch)
    trace = folder / TRACE_NAME
    return count, trace.stat().st_size, len(gzip.decompress(trace.read_bytes()))


def _baseline(setup, folder: Path, steps: int) -> int:
    """Bytes of the plain-JSON trace of `steps` steps with shapes and memory recorded."""
    cfg = setup[0]
    setup[1].probe = Probe()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True,
                                profile_memory=True) as profile:  # fmt: skip
        for k in range(1, steps + 1):
            with torch.profiler.record_function("step"):
                _step(*setup, k * cfg.schedule.batch)
    path = folder / "baseline.json"
    profile.export_chrome_trace(str(path))
    return path.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--res", type=int, default=8)
    parser.add_argument("--steps", type=int, default=5, help="steps asked of the profiler (--profile STEPS)")
    args = parser.parse_args()
    facts = Facts(DatasetFacts(args.res, 3, 0, "bench"), 1, "cpu")
    cfg = resolve(TrainOptions(data="bench", outdir="bench", preset="tiny", batch=8, aug="noaug", device="cpu"), facts)
    t, phases, G_ema = build(cfg, CPU)
    images, labels = torch.rand([8, 3, args.res, args.res]) * 2 - 1, torch.zeros([8, 0])
    setup = (cfg, t, phases, G_ema, images, labels)
    _step(*setup, 0)  # warm-up
    mb = 1e6
    print(f"tiny {args.res} px CPU, batch 8, --profile {args.steps}")
    with tempfile.TemporaryDirectory() as tmp:
        base = _baseline(setup, Path(tmp), args.steps)
        print(f"baseline (shapes + memory, plain JSON): {args.steps} steps, {base / mb:.2f} MB, "
              f"{base / args.steps / mb:.3f} MB/step")  # fmt: skip
        for detail in (False, True):
            count, disk, plain = _profiled(setup, Path(tmp) / f"detail-{detail}", args.steps, detail)
            name = "detail (shapes + memory + stacks)" if detail else "default (names and times)"
            print(f"{name}: {count} steps, {disk / mb:.2f} MB gzipped ({plain / mb:.2f} MB of JSON), "
                  f"{disk / count / mb:.3f} MB/step")  # fmt: skip


if __name__ == "__main__":
    main()
