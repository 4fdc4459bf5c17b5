"""Images/s delivered by `make_loader` for the zip-of-PNG, fast and shard formats, 64² and 256², 0 and 2 workers.

Writes synthetic archives (smooth random images, so PNG sizes are realistic) into a temporary folder, then times
on CPU the uint8 batches a GPU run receives, and the loader end to end (read, decode, collate, uint8 -> float in
[-1, 1]). Baseline in the same run: the zip format through DataLoader workers. The fast format is timed twice: as
make_loader reads it (a read-ahead thread of this process, whatever `--workers`), and through DataLoader workers as
before (`workers`=0: read in this process when asked, no thread). Per-core rates divide by the processes or threads
doing the reading (`workers`, or 1 when reading in this process).

A second table shows whether training waits for data: the time `next()` takes per step while each step computes for
a fixed time, for the fast format read ahead by the thread and read when asked.

A third table times shards (PNG and raw u8 members) read from the local folder and over HTTP from a loopback server
in another process (tests/server_helpers.py: byte ranges, as object stores answer), end to end as training gets
them, beside the zip format through DataLoader workers. For shards, `workers` is the number of decoding threads
(0: the read-ahead thread decodes); per core divides by it, as for the others.

    python benchmarks/data_throughput.py [--images 3000] [--seconds 4] [--batch 32] [--step-ms 20]
"""

import argparse
import contextlib
import multiprocessing
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import torch

from ganforge.data import make_loader, open_dataset
from ganforge.data.build import ZipWriter
from ganforge.data.fastformat import ContentHasher, FastWriter
from ganforge.data.images import digest, encode_png
from ganforge.data.loader import DeviceLoader, host_loader
from ganforge.data.shards import ShardWriter

SHARD_BYTES = 16 << 20  # several shards per archive, each many 8 MiB read-ahead blocks


def synthetic_image(rng: np.random.Generator, resolution: int) -> np.ndarray:
    """A [3, R, R] image: upsampled 8x8 colour noise plus fine grain, compressing like a photo rather than noise."""
    coarse = rng.integers(0, 256, (3, 8, 8)).astype(np.float32)
    smooth = np.kron(coarse, np.ones((resolution // 8, resolution // 8), np.float32))
    grain = rng.normal(0, 6, smooth.shape).astype(np.float32)
    return np.clip(smooth + grain, 0, 255).astype(np.uint8)


def write_archives(folder: Path, resolution: int, count: int) -> tuple[Path, Path]:
    """The zip and fast archives, and beside them folders of PNG and of u8 shards (`shard_folder`)."""
    rng = np.random.default_rng(resolution)
    zip_path, fast_path = folder / f"bench{resolution}.zip", folder / f"bench{resolution}.gfd"
    zip_writer, hasher = ZipWriter(zip_path), ContentHasher()
    fast_writer = FastWriter(fast_path, 3, resolution, resolution)
    shard_writers = {encoding: ShardWriter(shard_folder(folder, resolution, encoding), encoding, SHARD_BYTES)
                     for encoding in ("png", "u8")}  # fmt: skip
    for _ in range(count):
        pixels = synthetic_image(rng, resolution)
        png = encode_png(pixels)
        zip_writer.add(png)
        fast_writer.add(pixels)
        shard_writers["png"].add(png, None)
        shard_writers["u8"].add(pixels, None)
        hasher.add(digest(pixels))
    content_hash = hasher.finish(3, (resolution, resolution), [], None)
    header = {"count": count, "channels": 3, "resolution": resolution, "label_names": [], "content_hash": content_hash}
    zip_writer.finish(None, {**header, "build": {"benchmark": True}})
    fast_writer.finish(None, {"label_names": [], "content_hash": content_hash, "build": {"benchmark": True}})
    for writer in shard_writers.values():
        writer.finish(None, {**header, "build": {"benchmark": True}})
    return zip_path, fast_path


def shard_folder(folder: Path, resolution: int, encoding: str) -> Path:
    return folder / f"shards{resolution}-{encoding}"


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


def loaders(path: Path, workers: int, args) -> dict[str, object]:
    """The loaders timed for one archive: make_loader's choice and the DataLoader with `workers`, uint8 and float."""
    dataset = open_dataset(path)
    return {
        "chosen uint8": lambda: host_loader(dataset, args.batch, workers=workers, timeout_s=120),
        "chosen float": lambda: make_loader(dataset, args.batch, workers=workers, timeout_s=120),
        "dataloader uint8": lambda: host_loader(dataset, args.batch, workers=workers, timeout_s=120, in_process=False),
        "dataloader float": lambda: DeviceLoader(
            host_loader(dataset, args.batch, workers=workers, timeout_s=120, in_process=False), torch.device("cpu"), 120
        ),
    }


def throughput_rows(zip_path: Path, fast_path: Path, resolution: int, args) -> list[tuple]:
    """Per --workers and stage: zip, fast as chosen, fast through the DataLoader; per core; fast/zip per core."""
    rows = []
    for workers in (0, 2):
        zips, fasts = loaders(zip_path, workers, args), loaders(fast_path, workers, args)
        for stage in ("uint8", "float"):
            zip_rate = images_per_second(zips[f"dataloader {stage}"](), args.seconds)
            chosen = images_per_second(fasts[f"chosen {stage}"](), args.seconds)
            through_workers = images_per_second(fasts[f"dataloader {stage}"](), args.seconds)
            per_core = (zip_rate / max(workers, 1), chosen, through_workers / max(workers, 1))
            rates = (zip_rate, chosen, through_workers, *per_core)
            ratios = (per_core[1] / per_core[0], per_core[2] / per_core[0])
            rows.append((resolution, workers, stage, *(f"{r:.0f}" for r in rates), *(f"{r:.1f}x" for r in ratios)))
            print(" ".join(f"{item:>11}" for item in rows[-1]), flush=True)
    return rows


def serve(root: str, urls) -> None:
    """In a child process: the loopback HTTP server of the streaming tests, its URL sent back through `urls`."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from server_helpers import http_server

    with http_server(Path(root)) as server:
        urls.put(server.url)
        threading.Event().wait()


@contextlib.contextmanager
def http_root(root: Path):
    """The URL of `root` served over loopback HTTP by another process (so serving does not take this one's GIL)."""
    urls = multiprocessing.get_context("spawn").Queue()
    server = multiprocessing.get_context("spawn").Process(target=serve, args=(str(root), urls), daemon=True)
    server.start()
    try:
        yield urls.get(timeout=60)
    finally:
        server.kill()
        server.join()


def shard_rows(folder: Path, zip_paths: dict, url: str, args) -> None:
    """Per resolution, encoding, source and decoding threads: shard img/s end to end, per core, and / zip per core."""
    for resolution, zip_path in zip_paths.items():
        for workers in (0, 2):
            zip_loader = DeviceLoader(host_loader(open_dataset(zip_path), args.batch, workers=workers, timeout_s=120,
                                                  in_process=False), torch.device("cpu"), 120)  # fmt: skip
            zip_per_core = images_per_second(zip_loader, args.seconds) / max(workers, 1)
            for encoding in ("png", "u8"):
                local = shard_folder(folder, resolution, encoding)
                for source, path in (("local", local), ("http", f"{url}/{local.name}")):
                    dataset = open_dataset(path)
                    rate = images_per_second(make_loader(dataset, args.batch, workers=workers, timeout_s=120),
                                             args.seconds)  # fmt: skip
                    per_core = rate / max(workers, 1)
                    row = (resolution, encoding, source, workers, f"{rate:.0f}", f"{per_core:.0f}",
                           f"{zip_per_core:.0f}", f"{per_core / zip_per_core:.1f}x")  # fmt: skip
                    print(" ".join(f"{item:>11}" for item in row), flush=True)


def waits_per_step(batches, seconds: float, step_ms: float) -> float:
    """Mean ms spent in next() per step, each step computing (torch, GIL released) for `step_ms` after its batch."""
    batches, work = iter(batches), torch.ones(128, 128)
    for _ in range(3):
        next(batches)
    waited, steps, start = 0.0, 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        asked = time.perf_counter()
        next(batches)
        waited += time.perf_counter() - asked
        steps += 1
        busy_until = time.perf_counter() + step_ms / 1000
        while time.perf_counter() < busy_until:
            torch.mm(work, work)
    return 1000 * waited / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=3000, help="Images per archive.")
    parser.add_argument("--seconds", type=float, default=4.0, help="Timed seconds per configuration.")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--step-ms", type=float, default=20.0, help="Compute per step in the data-wait table.")
    args = parser.parse_args()
    # One intra-op thread: rates are per process, and on a busy machine torch's thread pool only adds waiting.
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} intra-op threads, {args.images} images per archive")
    print("fast: as make_loader reads it (a read-ahead thread); fast DL: through DataLoader workers (0: when asked)")
    columns = ("res", "--workers", "batches", "zip img/s", "fast img/s", "fast DL", "zip /core", "fast /core",
               "fast DL/c", "fast/zip/c", "DL/zip/c")  # fmt: skip
    print(" ".join(f"{name:>11}" for name in columns))
    with tempfile.TemporaryDirectory() as tmp:
        archives = {resolution: write_archives(Path(tmp), resolution, args.images) for resolution in (64, 256)}
        for resolution, (zip_path, fast_path) in archives.items():
            throughput_rows(zip_path, fast_path, resolution, args)
        print(f"\nms waiting for data per step, fast format, each step computing {args.step_ms:g} ms")
        print(" ".join(f"{name:>11}" for name in ("res", "read-ahead", "when asked")))
        for resolution, (_, fast_path) in archives.items():
            dataset = open_dataset(fast_path)
            ahead = waits_per_step(host_loader(dataset, args.batch, timeout_s=120), args.seconds, args.step_ms)
            asked = host_loader(dataset, args.batch, workers=0, in_process=False)
            asked = waits_per_step(asked, args.seconds, args.step_ms)
            waits = (ahead, asked)
            print(" ".join(f"{item:>11}" for item in (resolution, *(f"{w:.2f}" for w in waits))), flush=True)
        print(f"\nshards ({SHARD_BYTES >> 20} MiB each), end to end (float batches), beside zip through DataLoader "
              "workers; workers = decoding threads for shards")  # fmt: skip
        columns = ("res", "members", "from", "--workers", "img/s", "img/s/core", "zip /core", "shard/zip/c")
        print(" ".join(f"{name:>11}" for name in columns))
        with http_root(Path(tmp)) as url:
            shard_rows(Path(tmp), {resolution: paths[0] for resolution, paths in archives.items()}, url, args)


if __name__ == "__main__":
    main()
