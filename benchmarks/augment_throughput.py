"""Augmentation throughput (images/s, forward + backward) of AugmentPipe per group, on CPU or a GPU.

The baseline, measured in the same run, is the cheapest augmentation there is: an x-flip of the whole batch with
torch.flip. Each group runs at p = 1 (every transform on every image, the worst case), at p = 0.2 (a typical ADA
value), 0.05 and 0 (the start of an ADA run). The geometric group resamples every image and keeps the unmoved ones'
input with torch.where, so that the step never waits for the device; the rows marked "moved only" time what it did
before, resampling only the moved images (`nonzero`, a host sync per call on CUDA), for the cost of that choice.

    .venv/bin/python benchmarks/augment_throughput.py [--resolution 64] [--batch 32] [--iters 10] [--threads 2]
"""

import argparse
import statistics
import time

import torch

from ganforge.augment import ops
from ganforge.augment.pipe import AugmentPipe


def median_seconds(step, iters: int, device: torch.device) -> float:
    """Median wall time of `step()` over `iters` runs, after one untimed warm-up run."""
    step()
    times = []
    for _ in range(iters):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def augment_step(augment, images: torch.Tensor):
    def step():
        x = images.detach().requires_grad_(True)
        augment(x).square().mean().backward()

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resolution", type=int, default=64)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    device = torch.device(args.device)
    images = torch.rand(args.batch, 3, args.resolution, args.resolution, device=device) * 2 - 1
    baseline = median_seconds(augment_step(lambda x: x.flip(-1), images), args.iters, device)
    print(f"{args.resolution}px batch {args.batch} on {device}; baseline flip: {args.batch / baseline:,.0f} img/s")
    print(f"{'preset':16} {'p':>4} {'img/s':>10} {'x baseline time':>16}")
    for preset in ("blit", "geom", "color", "bgc"):
        for p in (1.0, 0.2, 0.05, 0.0):
            for name, kind in ((preset, AugmentPipe), (f"{preset} moved only", MovedOnly)):
                if kind is MovedOnly and preset not in ("geom", "bgc"):
                    continue
                pipe = kind(preset, p=p).to(device)
                seconds = median_seconds(augment_step(pipe, images), args.iters, device)
                print(f"{name:16} {p:4.2f} {args.batch / seconds:10,.0f} {seconds / baseline:16.1f}")


class MovedOnly(AugmentPipe):
    """The geometric group as it was: only the moved images resampled, found with `nonzero` (a host sync)."""

    def _geometric(self, images: torch.Tensor, inverse: torch.Tensor) -> torch.Tensor:
        moved = (inverse != torch.eye(3, device=inverse.device)).flatten(1).any(dim=1).nonzero().squeeze(1)
        if moved.numel() == 0:
            return images
        warped = ops.resample(images.index_select(0, moved), inverse[moved], self.filter.to(images.device))
        return images.index_copy(0, moved, warped)


if __name__ == "__main__":
    main()
