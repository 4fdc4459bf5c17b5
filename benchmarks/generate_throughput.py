"""Images per second of `ganforge generate` (latents from seeds, batched synthesis, one PNG per seed, loading the
snapshot included) for the `tiny` preset's 32 px generator and a config-F 256 px generator, against the bare generator
forward of the same batches (no seeds, no files) measured in the same run. Each figure is the median of --repeats
alternating runs; CPU seconds per image (all threads) are printed too, as they vary less than wall time on a shared
machine.

    .venv/bin/python benchmarks/generate_throughput.py [--device cpu|cuda] [--threads 2] [--images 32] [--batch 8]
"""

import argparse
import statistics
import tempfile
import time
from functools import partial
from pathlib import Path

import torch

from ganforge.generate import GenerateOptions, generate
from ganforge.nets import Generator
from ganforge.snapshot import save_snapshot

CONFIGS = {
    "tiny 32px": dict(resolution=32, z_dim=64, w_dim=64, channel_base=512, channel_max=64, mapping_layers=2),
    "config-F 256px": dict(resolution=256, z_dim=512, w_dim=512, channel_base=16384, channel_max=512, mapping_layers=8),
}


def timed(run) -> tuple[float, float]:
    """(wall seconds, process CPU seconds) of run()."""
    start, start_cpu = time.perf_counter(), time.process_time()
    run()
    return time.perf_counter() - start, time.process_time() - start_cpu


def bare_forward(G: Generator, images: int, batch: int, device: torch.device):
    """A function running G(z, c) over `images` images in batches of `batch`."""
    z = torch.randn(batch, G.z_dim, device=device)
    c = torch.zeros(batch, 0, device=device)

    @torch.no_grad()
    def run():
        for _ in range(images // batch):
            G(z, c, noise_mode="const")
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--images", type=int, default=32)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    n = args.images // args.batch * args.batch
    print(
        f"device {device}, {torch.get_num_threads()} threads, {n} images, batch {args.batch}, median of {args.repeats}"
    )
    print(f"{'generator':<16}{'bare G img/s':>14}{'CPU s/img':>11}{'generate img/s':>16}{'CPU s/img':>11}")
    with tempfile.TemporaryDirectory() as folder:
        for name, arch in CONFIGS.items():
            torch.manual_seed(0)
            G = Generator(**arch).eval()
            snapshot = Path(folder) / "G.safetensors"
            save_snapshot(snapshot, G, {})
            options = GenerateOptions(network=snapshot, outdir=Path(folder) / "out", seeds=tuple(range(n)),
                                      batch=args.batch, device=args.device)  # fmt: skip
            bare = bare_forward(G.to(device), n, args.batch, device)
            bare(), generate(options)  # warm-up
            runs = [(timed(bare), timed(partial(generate, options))) for _ in range(args.repeats)]
            figures = []
            for k in range(2):
                wall = statistics.median(r[k][0] for r in runs)
                cpu = statistics.median(r[k][1] for r in runs)
                figures += [n / wall, cpu / n]
            print(f"{name:<16}{figures[0]:>14.2f}{figures[1]:>11.3f}{figures[2]:>16.2f}{figures[3]:>11.3f}")


if __name__ == "__main__":
    main()
