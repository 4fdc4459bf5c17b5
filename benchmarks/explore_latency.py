"""Latency of `ganforge explore` per request, p50 and p95, measured by a client against the real server on this
machine: a seed's image, a slider move (another truncation psi for the same seed), a style mix, and a seed-grid page
(16 seeds). Every request asks for something not asked before, so none is answered from the server's cache. Two
networks: the demo run's `tiny` snapshot when `make demo` has made it (else a random one of its shape), and a randomly
initialised config-F 256 px StyleGAN2 generator.

    .venv/bin/python benchmarks/explore_latency.py [--demo PATH] [--repeats 20] [--repeats-256 5] [--device cpu]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import torch

from ganforge.nets import Generator
from ganforge.snapshot import save_snapshot

DEMO = Path("demo/runs/00000-digits-tiny-gpus1-batch16/snapshots/network-snapshot-000040.000.safetensors")
TINY = dict(resolution=32, z_dim=64, w_dim=64, channel_base=512, channel_max=64, mapping_layers=2, img_channels=1)
CONFIG_F_256 = dict(resolution=256, z_dim=512, w_dim=512, channel_base=16384, channel_max=512, mapping_layers=8)
KINDS = ("seed image", "slider move", "style mix", "grid page")


def _random_snapshot(path: Path, arch: dict) -> Path:
    torch.manual_seed(0)
    save_snapshot(path, Generator(**arch), {})
    return path


def _query(kind: str, k: int) -> str:
    """The k-th request of a kind, each asking for something new."""
    return {
        "seed image": f"image?seed={1000 + k}",
        "slider move": f"image?seed=7&trunc={0.5 + 0.01 * (k + 1)}",
        "style mix": f"mix?seed=7&source={2000 + k}",
        "grid page": f"grid?page={100 + k}",
    }[kind]


def _seconds(url: str) -> float:
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=600) as response:
        assert response.status == 200
        response.read()
    return time.perf_counter() - start


def measure(network: Path, repeats: int, device: str) -> dict[str, list[float]]:
    command = [
        sys.executable,
        "-m",
        "ganforge",
        "explore",
        "--network",
        str(network),
        "--port",
        "0",
        "--device",
        device,
    ]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=os.environ)
    try:
        url = proc.stdout.readline().split()[2]
        _seconds(f"{url}api/image?seed=0")  # warm-up: first-call allocations
        return {kind: [_seconds(f"{url}api/{_query(kind, k)}") for k in range(repeats)] for kind in KINDS}
    finally:
        proc.terminate()
        proc.wait()


def _ms(values: list[float], q: float) -> str:
    ranked = sorted(values)
    return f"{1000 * ranked[min(len(ranked) - 1, round(q * (len(ranked) - 1)))]:.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--demo", type=Path, default=DEMO)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--repeats-256", type=int, default=5)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    print(f"torch threads: {torch.get_num_threads()}, device {args.device}")
    with tempfile.TemporaryDirectory() as tmp:
        demo = args.demo if args.demo.is_file() else _random_snapshot(Path(tmp) / "tiny.safetensors", TINY)
        networks = (
            (f"demo tiny 32 px ({'trained' if demo == args.demo else 'random'})", demo, args.repeats),
            (
                "config-F 256 px (random)",
                _random_snapshot(Path(tmp) / "f256.safetensors", CONFIG_F_256),
                args.repeats_256,
            ),
        )
        print("| network | request | n | p50 ms | p95 ms | mean ms |\n| --- | --- | --- | --- | --- | --- |")
        for name, path, repeats in networks:
            for kind, values in measure(path, repeats, args.device).items():
                mean = f"{1000 * statistics.fmean(values):.0f}"
                print(f"| {name} | {kind} | {len(values)} | {_ms(values, 0.5)} | {_ms(values, 0.95)} | {mean} |")


if __name__ == "__main__":
    main()
