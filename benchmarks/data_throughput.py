"""Images/s delivered by `make_loader` for the zip-of-PNG and fast formats, 64² and 256², 0 and 2 workers.

Writes synthetic archives (smooth random images, so PNG sizes are realistic) into a temporary folder, then times
the loader end to end on CPU: read, decode, collate, uint8 -> float in [-1, 1]. Per-core rates divide by the
processes doing the reading (1 with workers=0, else `workers`). Baseline in the same run: the zip format.

    python benchmarks/data_throughput.py [--images 3000] [--seconds 4] [--batch 32]
"""

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from ganforge.data import make_loader, open_dataset
from ganforge.data.build import ZipWriter
from ganforge.data.fastformat import ContentHasher, FastWriter
from ganforge.data.images import digest, encode_png
from ganforge.data.loader import host_loader


def synthetic_image(rng: np.random.Generator, resolution: int) -> np.ndarray:
    """A [3, R, R] image: upsampled 8x8 colour noise plus fine grain, compressing like a photo rather than noise."""
    coarse = rng.integers(0, 256, (3, 8, 8)).astype(np.float32)
    smooth = np.kron(coarse, np.ones((resolution // 8, resolution // 8), np.float32))
    grain = rng.normal(0, 6, smooth.shape).astype(np.float32)
    return np.clip(smooth + grain, 0, 255).astype(np.uint8)


def write_archives(folder: Path, resolution: int, count: int) -> tuple[Path, Path]:
    rng = np.random.default_rng(resolution)
    zip_path, fast_path = folder / f"bench{resolution}.zip", folder / f"bench{resolution}.gfd"
    zip_writer, fast_writer, hasher = ZipWriter(zip_path), FastWriter(fast_path, 3, resolution), ContentHasher()
    for _ in range(count):
        pixels = synthetic_image(rng, resolution)
        zip_writer.add(encode_png(pixels))
        fast_writer.add(pixels)
        hasher.add(digest(pixels))
    content_hash = hasher.finish(3, resolution, [], None)
    header = {"count": count, "channels": 3, "resolution": resolution, "label_names": [], "content_hash": content_hash}
    zip_writer.finish(None, {**header, "build": {"benchmark": True}})
    fast_writer.finish(None, {"label_names": [], "content_hash": content_hash, "build": {"benchmark": True}})
    return zip_path, fast_path


def images_per_second(batches, seconds: float) -> float:
    """Steady-state rate: a few warm-up batches (worker start-up, page cache), then timed batches for `seconds`."""
    batches = iter(batches)
    for _ in range(3):
        next(batches)
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        images, _ = next(batches)
        count += images.shape[0]
    return count / (time.perf_counter() - start)


def measure(path: Path, workers: int, args) -> tuple[float, float]:
    """(uint8 batches/s from the DataLoader, as a GPU run receives them; float [-1, 1] batches/s on the CPU)."""
    dataset = open_dataset(path)
    host = images_per_second(host_loader(dataset, args.batch, workers=workers, timeout_s=120), args.seconds)
    full = images_per_second(make_loader(dataset, args.batch, workers=workers, timeout_s=120), args.seconds)
    return host, full


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=3000, help="Images per archive.")
    parser.add_argument("--seconds", type=float, default=4.0, help="Timed seconds per configuration.")
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()
    # One intra-op thread: rates are per process, and on a busy machine torch's thread pool only adds waiting.
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} intra-op threads, {args.images} images per archive")
    columns = ("res", "workers", "path", "zip img/s", "fast img/s", "zip /core", "fast /core", "fast/zip")
    print(" ".join(f"{name:>10}" for name in columns))
    with tempfile.TemporaryDirectory() as tmp:
        for resolution in (64, 256):
            zip_path, fast_path = write_archives(Path(tmp), resolution, args.images)
            for workers in (0, 2):
                cores = max(workers, 1)
                for path_name, zip_rate, fast_rate in zip(
                    ("uint8", "float-cpu"),
                    measure(zip_path, workers, args),
                    measure(fast_path, workers, args),
                    strict=True,
                ):
                    row = (resolution, workers, path_name, *(f"{r:.0f}" for r in (zip_rate, fast_rate)))
                    row += (f"{zip_rate / cores:.0f}", f"{fast_rate / cores:.0f}", f"{fast_rate / zip_rate:.1f}x")
                    print(" ".join(f"{item:>10}" for item in row), flush=True)


if __name__ == "__main__":
    main()
