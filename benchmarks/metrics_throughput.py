"""Inception feature throughput (images/s) for FID/KID/PR, on CPU and, when present, on a GPU.

Per device, three figures at one batch size:
- baseline: the bare TorchScript network on a float [B, 3, 299, 299] batch already in [-1, 1];
- protocol: ganforge's InceptionFeatures on uint8 images at --resolution (TF1 bilinear resize to 299, normalise,
  network, all in IEEE fp32), what every metric pays per image;
- +stats: the same plus the float64 running sums of FeatureStats (mean and covariance accumulation).
On a GPU also the protocol under TF32 (what cuDNN would do by default), with the largest feature difference, to show
what forcing IEEE fp32 costs.

    .venv/bin/python benchmarks/metrics_throughput.py [--resolution 256] [--batch 32] [--iters 5] [--threads 2]
"""

import argparse
import statistics
import time

import torch

from ganforge.metrics import inception
from ganforge.metrics.features import FeatureStats


def median_seconds(step, iters: int, device: torch.device) -> tuple[float, float]:
    """Median wall and process CPU time of `step()` over `iters` runs, after one untimed warm-up run.

    CPU time shows the work when other processes share the cores (wall time then mostly measures waiting).
    """
    step()
    walls, cpus = [], []
    for _ in range(iters):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start, cpu_start = time.perf_counter(), time.process_time()
        step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu_start)
    return statistics.median(walls), statistics.median(cpus)


def tf32_features(net: inception.InceptionFeatures, images: torch.Tensor) -> torch.Tensor:
    """The protocol's steps with TF32 allowed for convolutions and matmuls (for comparison only)."""
    backends = (torch.backends.cudnn.conv, torch.backends.cuda.matmul)
    saved = [b.fp32_precision for b in backends]
    for b in backends:
        b.fp32_precision = "tf32"
    try:
        with torch.no_grad():
            x = inception.tf1_bilinear_resize(images.float(), inception.INCEPTION_SIZE)
            return net.net((x - 128) / 128)
    finally:
        for b, value in zip(backends, saved, strict=True):
            b.fp32_precision = value


def run_device(device: torch.device, args) -> None:
    net = inception.load_inception(device=device)
    gen = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (args.batch, 3, args.resolution, args.resolution), generator=gen, dtype=torch.uint8)
    images = images.to(device)
    ready = (torch.rand(args.batch, 3, 299, 299, generator=gen) * 2 - 1).to(device)
    stats = FeatureStats(inception.FEATURE_DIM, capture_all=False, device=device)

    def bare():
        with torch.no_grad(), inception.ieee_fp32():
            net.net(ready)

    rows = [
        ("baseline (bare net, 299 float)", median_seconds(bare, args.iters, device)),
        (f"protocol ({args.resolution}px uint8)", median_seconds(lambda: net(images), args.iters, device)),
        ("protocol + float64 stats", median_seconds(lambda: stats.append(net(images)), args.iters, device)),
    ]
    if device.type == "cuda":
        rows.append(("protocol under TF32", median_seconds(lambda: tf32_features(net, images), args.iters, device)))
    base = rows[0][1][0]
    print(f"\n{device} ({torch.cuda.get_device_name(device) if device.type == 'cuda' else 'CPU'}), batch {args.batch}")
    print(f"{'path':34} {'img/s':>10} {'time vs baseline':>17} {'CPU s/img':>10}")
    for name, (wall, cpu) in rows:
        print(f"{name:34} {args.batch / wall:10.1f} {wall / base:16.2f}x {cpu / args.batch:10.3f}")
    if device.type == "cuda":
        diff = (tf32_features(net, images) - net(images)).abs().max().item()
        print(f"max |TF32 - IEEE| feature difference: {diff:.2e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resolution", type=int, default=256)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--gpu-batch", type=int, default=256)
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--devices", default="cpu,cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} CPU threads, protocol {inception.PROTOCOL}")
    for name in args.devices.split(","):
        device = torch.device(name)
        batch = args.gpu_batch if device.type == "cuda" else args.batch
        run_device(device, argparse.Namespace(**{**vars(args), "batch": batch}))


if __name__ == "__main__":
    main()
