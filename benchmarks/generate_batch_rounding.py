"""What `ganforge generate --batch` changes in the files, and what making every image alone would cost.

Rounding: for --runs networks (the demo's 32 px generator, each initialised from its own seed), seeds 0-15 are
generated with --batch 1 and with --batch 16, and a few seeds again alone with --batch 1; prints, per run, the files
whose bytes differ between the two batch sizes, their differing pixels and the largest difference in levels of 255,
and checks that an image made with --batch 1 has the same bytes alone as among the other seeds.

Cost: CPU seconds per image of the synthesis network (all threads, which vary less than wall time on a shared machine)
in batches of --batch against one image at a time, in alternating rounds in this one process, the median of each.

    .venv/bin/python benchmarks/generate_batch_rounding.py [--runs 20] [--threads 2] [--rounds 3] [--skip-cost]
"""

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import PIL.Image
import torch

from ganforge.generate import GenerateOptions, generate
from ganforge.nets import Generator
from ganforge.snapshot import save_snapshot

DEMO = dict(resolution=32, z_dim=64, w_dim=64, channel_base=512, channel_max=64, mapping_layers=2)
COST_CONFIGS = {
    "tiny 32px": (DEMO, 32),
    "128px cbase 8192": (dict(resolution=128, z_dim=512, w_dim=512, channel_base=8192, channel_max=512), 8),
    "config-F 256px": (dict(resolution=256, z_dim=512, w_dim=512, channel_base=16384, channel_max=512), 4),
}
SEEDS = tuple(range(16))
ALONE = (2, 9)


def pixels(folder: Path, seed: int) -> np.ndarray:
    return np.asarray(PIL.Image.open(folder / f"seed{seed:07d}.png")).astype(int)


def rounding_run(folder: Path, run: int) -> list[tuple[int, int, int]]:
    """(seed, differing pixels, largest difference) for each file that --batch 1 and --batch 16 write differently."""
    torch.manual_seed(run)
    snapshot = folder / f"G{run}.safetensors"
    save_snapshot(snapshot, Generator(**DEMO), {})
    for name, batch, seeds in (("b1", 1, SEEDS), ("b16", 16, SEEDS), ("alone", 1, ALONE)):
        generate(GenerateOptions(network=snapshot, outdir=folder / f"{run}-{name}", seeds=seeds, batch=batch,
                                 device="cpu"))  # fmt: skip
    for seed in ALONE:
        name = f"seed{seed:07d}.png"
        alone, among = (folder / f"{run}-{k}" / name for k in ("alone", "b1"))
        assert alone.read_bytes() == among.read_bytes(), f"run {run}: --batch 1 seed {seed} depends on the others"
    found = []
    for seed in SEEDS:
        one, sixteen = pixels(folder / f"{run}-b1", seed), pixels(folder / f"{run}-b16", seed)
        if not np.array_equal(one, sixteen):
            found.append((seed, int((one != sixteen).any(-1).sum()), int(np.abs(one - sixteen).max())))
    return found


def rounding(runs: int) -> None:
    total_files = total_pixels = largest = with_difference = 0
    with tempfile.TemporaryDirectory() as folder:
        for run in range(runs):
            found = rounding_run(Path(folder), run)
            with_difference += bool(found)
            total_files += len(found)
            total_pixels += sum(n for _, n, _ in found)
            largest = max([largest] + [m for *_, m in found])
            shown = ", ".join(f"seed {s}: {n} px by {m}" for s, n, m in found) or "none"
            print(f"run {run:3d}: files differing between --batch 1 and 16: {len(found):2d}/16 ({shown})")
    print(
        f"{runs} runs: {with_difference} with a difference; {total_files} of {16 * runs} files, {total_pixels} of "
        f"{16 * runs * 32 * 32} pixels, by at most {largest} level(s); --batch 1 alone = among the others in all"
    )


def synthesis_cpu_seconds(G: Generator, ws: torch.Tensor, batch: int) -> float:
    """CPU seconds of synthesizing ws [N, num_ws, w_dim] in batches of `batch`."""
    start = time.process_time()
    with torch.no_grad():
        for chunk in ws.split(batch):
            G.synthesis(chunk, noise_mode="const")
    return time.process_time() - start


def cost(rounds: int) -> None:
    print(f"{'generator':<18}{'batch':>6}{'batched img/s':>15}{'alone img/s':>13}{'alone / batched':>17}  (CPU time)")
    for name, (arch, batch) in COST_CONFIGS.items():
        torch.manual_seed(0)
        G = Generator(**arch).eval()
        G.use_cpu_kernels(True)  # as generate builds a network for the CPU
        with torch.no_grad():
            ws = G.mapping(torch.randn(batch, G.z_dim), torch.zeros(batch, 0))
        synthesis_cpu_seconds(G, ws, batch), synthesis_cpu_seconds(G, ws, 1)  # warm-up
        times = [(synthesis_cpu_seconds(G, ws, batch), synthesis_cpu_seconds(G, ws, 1)) for _ in range(rounds)]
        b, a = (statistics.median(t[k] for t in times) for k in (0, 1))
        print(f"{name:<18}{batch:>6}{batch / b:>15.2f}{batch / a:>13.2f}{a / b:>16.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--skip-cost", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    rounding(args.runs)
    if not args.skip_cost:
        cost(args.rounds)


if __name__ == "__main__":
    main()
