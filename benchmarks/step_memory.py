"""The memory model against the memory a real step takes: for several configurations, the peak that
`ganforge.train.step_memory` traces on fake tensors (what `train --gpu-memory` and `bench --batch-gpu auto` decide
with) beside the peak of one real step, building the networks included: on a CPU the allocator's running total as
torch's profiler records it, on a GPU torch.cuda.max_memory_allocated. The trace's own time is printed too.

    .venv/bin/python benchmarks/step_memory.py                 # CPU: tiny configs to stylegan2 at 64 px
    .venv/bin/python benchmarks/step_memory.py --device cuda   # also paper256 at batch 8 and 32
    python benchmarks/step_memory.py --largest --cfg paper1024 --resolution 1024 --precision bf16 --device cuda

Both sides run the reference ops eagerly (as `--kernels reference` without `--compile`), so they are the same step.
`--largest` prints, as JSON, the largest per-device batch (a multiple of --multiple) whose traced step fits the GPU's
free memory (or --gpu-memory) with the model's headroom: the batch benchmarks/gpu_suite.py runs paper1024 at. The
peak grows about linearly with the batch, so two traces draw the line and a third confirms its pick (stepping down
while it does not fit).
"""

import argparse
import json
import time

import torch

from ganforge.bench.memory import measured_peak_bytes
from ganforge.memory import size_text
from ganforge.train.options import TrainOptions
from ganforge.train.resolver import DatasetFacts, Facts, resolve
from ganforge.train.step_memory import budget, fits, step_peak_bytes

# (preset, resolution, batch per device, other train options)
CPU_CONFIGS = (
    ("tiny", 16, 8, {"aug": "ada"}),
    ("tiny", 32, 16, {"aug": "ada"}),
    ("tiny3", 16, 8, {"aug": "ada"}),
    ("tiny-r3gan", 16, 8, {}),
    ("stylegan2", 64, 8, {"aug": "ada", "cbase": 8192}),
    ("stylegan2", 64, 8, {"aug": "ada", "cbase": 8192, "grad_checkpoint": True}),
)
CUDA_CONFIGS = CPU_CONFIGS + (
    ("paper256", 256, 8, {"aug": "ada"}),
    ("paper256", 256, 32, {"aug": "ada", "precision": "bf16"}),
)


def config(preset: str, resolution: int, batch: int, device: str, extra: dict):
    options = TrainOptions(data="synthetic", outdir="unused", preset=preset, batch=batch, batch_gpu=batch,
                           device=device, **extra)  # fmt: skip
    facts = DatasetFacts(resolution=resolution, channels=3, label_dim=0, name="synthetic")
    return resolve(options, Facts(facts, 1, device))


def largest(args, device: torch.device) -> dict:
    """The largest batch per device whose traced step fits, with the traces that found it."""
    available, where = budget(args.gpu_memory, device)
    assert available is not None, "--largest needs a GPU or --gpu-memory"
    extra = {"precision": args.precision}

    def traced(batch: int) -> int:
        return step_peak_bytes(config(args.cfg, args.resolution, batch, args.device, extra), device.type == "cuda")

    m = args.multiple
    low, high = traced(m), traced(2 * m)
    per_image = (high - low) / m
    candidates = [b for b in range(m, args.max_batch + 1, m) if fits(round(low + per_image * (b - m)), available)]
    batch, peak = (candidates[-1], None) if candidates else (None, None)
    while batch is not None:
        peak = low if batch == m else high if batch == 2 * m else traced(batch)
        if fits(peak, available):
            break
        batch = batch - m if batch > m else None
    return {"batch_gpu": batch, "traced_gb": None if batch is None else peak / 2**30,
            "available_gb": available / 2**30, "available": where, "line_gb": [low / 2**30, high / 2**30]}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--largest", action="store_true", help="print the largest batch that fits, as JSON")
    parser.add_argument("--cfg", default="paper1024")
    parser.add_argument("--resolution", type=int, default=1024)
    parser.add_argument("--precision", default="bf16")
    parser.add_argument("--multiple", type=int, default=4, help="batches tried: multiples of this (mbstd group)")
    parser.add_argument("--max-batch", type=int, default=256)
    parser.add_argument("--gpu-memory", type=float, help="GB to plan for instead of the GPU's free memory")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    if args.largest:
        print(json.dumps(largest(args, device)))
        return
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else f"CPU, {args.threads} threads"
    print(f"step memory: traced vs measured on {where}")
    print(f"{'config':48} {'traced':>10} {'measured':>10} {'error':>7} {'trace s':>8}")
    for preset, resolution, batch, extra in CUDA_CONFIGS if device.type == "cuda" else CPU_CONFIGS:
        cfg = config(preset, resolution, batch, args.device, extra)
        start = time.perf_counter()
        traced = step_peak_bytes(cfg, cuda=device.type == "cuda")
        seconds = time.perf_counter() - start
        measured = measured_peak_bytes(cfg, device)
        name = f"{preset} {resolution}px batch {batch} " + " ".join(f"{k}={v}" for k, v in extra.items())
        error = (traced - measured) / measured
        print(f"{name:48} {size_text(traced):>10} {size_text(measured):>10} {error:>+7.1%} {seconds:>8.1f}")


if __name__ == "__main__":
    main()
