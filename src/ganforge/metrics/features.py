"""Image streams and feature statistics, sharded across ranks and accumulated in float64 (sums of
many float32 features lose precision that FID's covariances need).

Every image has a global position p in [0, n). Rank r handles the positions p with p % world_size == r, and what
an image is depends only on (seed, p): a dataset subset is fixed by the seed, a generated image's latent and label come
from an RNG seeded by (seed, p). So a metric does not depend on the number of ranks (up to float rounding of sums;
for generated images also the per-batch noise), and `gather_rows` restores global order.
"""

import hashlib
import io
import itertools
import json
import math
import warnings
import zipfile
from collections.abc import Iterator
from pathlib import Path
from tokenize import TokenError

import numpy as np
import torch

from ganforge import dist
from ganforge.data.loader import to_uint8
from ganforge.durable import WriteError, replace_file, shorten
from ganforge.progress import Stage

# What np.load or zipfile raise for a damaged cache file (bad zip, bad .npy header, truncated member); numpy's parser
# of an old-style .npy header lets tokenize's error and a SyntaxError out for a malformed one.
_UNREADABLE = (OSError, ValueError, EOFError, KeyError, SyntaxError, TokenError, zipfile.BadZipFile)


def position_seed(seed: int, stream: str, position: int) -> int:
    """A 63-bit seed that depends only on (seed, stream, position): independent streams per purpose and image."""
    digest = hashlib.sha256(f"{seed}/{stream}/{position}".encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def position_rng(seed: int, stream: str, position: int) -> torch.Generator:
    return torch.Generator().manual_seed(position_seed(seed, stream, position))


def gather_rows(local: torch.Tensor, total: int) -> torch.Tensor:
    """Rows of every rank in global position order: local row j of rank r is global row j * world_size + r."""
    world, rank = dist.world_size(), dist.rank()
    per_rank = -(-total // world)
    assert local.shape[0] == len(range(rank, total, world)), (local.shape, total)
    buffer = local.new_zeros(per_rank, world, *local.shape[1:])  # [row within rank, rank, ...]
    buffer[: local.shape[0], rank] = local
    return dist.all_reduce_sum_(buffer).flatten(0, 1)[:total]


def dataset_subset(ds, count: int | None, seed: int) -> tuple[list[int], str]:
    """The dataset indices a metric uses, and a name for the rule (part of the reference-statistics cache key).

    All images in order when `count` covers the dataset; otherwise a seeded random subset, so that a capped count does
    not take only the first classes of a dataset stored in class order. Shards are read as a stream: their first
    `count` images, a random subset already (`dataset build` shuffles them into the shards).
    """
    n = len(ds)
    if count is None or count >= n:
        return list(range(n)), "all"
    if getattr(ds, "streamed", False):
        return list(range(count)), f"first-{count}"
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed))[:count]
    return sorted(perm.tolist()), f"random-{count}-seed{seed}"


def dataset_batches(ds, indices: list[int], batch_size: int, workers: int) -> Iterator[torch.Tensor]:
    """uint8 [B, C, H, W] batches of this rank's share of `indices` (global positions p -> ds[indices[p]]).

    Zips and folders are decoded by `workers` processes; the fast format is read in this process, where copying out
    of its memory map is faster than receiving the batches from workers (as in training, data/loader.py)."""
    from ganforge.data.loader import WorkerLoader, collate, reads_in_process  # ImageDataset: whole stacked batches

    if getattr(ds, "streamed", False):  # indices are the first len(indices) images (dataset_subset); ranks share them
        stream = ds.first(len(indices))
        mine = (pixels for position, (pixels, _) in enumerate(stream) if position % dist.world_size() == dist.rank())
        while batch := list(itertools.islice(mine, batch_size)):
            yield torch.from_numpy(np.stack(batch))
        return
    workers = 0 if reads_in_process(ds) else workers
    local = indices[dist.rank() :: dist.world_size()]
    subset = torch.utils.data.Subset(ds, local)
    loader = WorkerLoader(subset, batch_size=batch_size, shuffle=False, num_workers=workers, collate_fn=collate)
    for images, _labels in loader:
        yield images


def generator_batches(G, count: int, batch_size: int, device, seed: int, labels=None) -> Iterator[torch.Tensor]:
    """uint8 [B, C, H, W] images from G for this rank's positions; z and c come from position_rng(seed, ., p).

    `labels` is an ImageDataset whose labels are drawn at random for a conditional G (the reals' label mix).
    Per-layer noise is random, drawn inside torch.random.fork_rng so the caller's RNG state is left untouched.
    """
    positions = list(range(dist.rank(), count, dist.world_size()))
    for start in range(0, len(positions), batch_size):
        chunk = positions[start : start + batch_size]
        z = torch.stack([torch.randn(G.z_dim, generator=position_rng(seed, "z", p)) for p in chunk])
        c = torch.zeros(len(chunk), G.c_dim)
        if G.c_dim > 0:
            # label() reads only the label, not the image; mirrored copies share their originals' labels.
            picks = [int(torch.randint(labels.num_raw, (), generator=position_rng(seed, "c", p))) for p in chunk]
            c = torch.from_numpy(np.stack([labels.label(i) for i in picks]))
        forked = [device] if torch.device(device).type == "cuda" else []
        with torch.no_grad(), torch.random.fork_rng(devices=forked):
            torch.manual_seed(position_seed(seed, "noise", chunk[0]))
            yield to_uint8(G(z.to(device), c.to(device), noise_mode="random"))


def progress(
    batches: Iterator[torch.Tensor], total: int, desc: str, enabled: bool, *, source: str | None, work: str | None
) -> Iterator[torch.Tensor]:
    """Show a batch stream as a progress.Stage counting images (rank 0 only, when enabled); its closing line splits
    the time into waiting for the stream (part `source`, e.g. reading) and the consumer's work on each batch (part
    `work`, e.g. Inception features). None: a part not timed."""
    with Stage(desc, total, "img", enabled=enabled and dist.is_main()) as stage:
        while True:
            with stage.part(source):
                batch = next(batches, None)
            if batch is None:
                return
            with stage.part(work):
                yield batch
            stage.update(len(batch) * dist.world_size())


class FeatureStats:
    """Mean and covariance of feature vectors from float64 running sums; optionally every vector (KID, PR).

    `append` takes this rank's share; `finalize` sums over ranks (collective) and gathers all vectors in global order.
    """

    def __init__(self, dim: int, capture_all: bool, device):
        self.dim, self.capture_all, self.count = dim, capture_all, 0
        self.sum = torch.zeros(dim, dtype=torch.float64, device=device)
        self.outer = torch.zeros(dim, dim, dtype=torch.float64, device=device)
        self._local: list[torch.Tensor] = []
        self.all: torch.Tensor | None = None

    def append(self, features: torch.Tensor) -> None:
        assert features.ndim == 2 and features.shape[1] == self.dim, features.shape
        x = features.to(torch.float64)
        self.sum += x.sum(0)
        self.outer += x.T @ x
        self.count += x.shape[0]
        if self.capture_all:
            self._local.append(features.to(torch.float32))

    def finalize(self, total: int) -> "FeatureStats":
        count = torch.tensor([float(self.count)], dtype=torch.float64, device=self.sum.device)
        dist.all_reduce_sum_(self.sum)
        dist.all_reduce_sum_(self.outer)
        self.count = int(dist.all_reduce_sum_(count).item())
        assert self.count == total, (self.count, total)
        if self.capture_all:
            local = torch.cat(self._local) if self._local else self.sum.new_zeros(0, self.dim, dtype=torch.float32)
            self.all, self._local = gather_rows(local, total), []
        return self

    def mean_cov(self) -> tuple[np.ndarray, np.ndarray]:
        """Mean and unbiased covariance, float64 numpy."""
        mean = self.sum / self.count
        cov = (self.outer - self.count * torch.outer(mean, mean)) / max(self.count - 1, 1)
        return mean.cpu().numpy(), cov.cpu().numpy()

    def save(self, path: Path, meta: dict) -> None:
        """Atomic .npz (no pickle): sums, count, and the vectors when captured. A cache that cannot be written (a
        read-only or full disk) costs only the time to compute the statistics again next time: a warning."""
        arrays = {"sum": self.sum.cpu().numpy(), "outer": self.outer.cpu().numpy(), "count": np.array(self.count)}
        if self.all is not None:
            arrays["all"] = self.all.cpu().numpy()
        buffer = io.BytesIO()
        np.savez(buffer, meta=np.array(json.dumps(meta, sort_keys=True)), **arrays)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            replace_file(path, buffer.getvalue())
        except (OSError, WriteError) as error:
            warnings.warn(
                f"{shorten(path)}: the reference statistics are not cached ({shorten(error, 300)})", stacklevel=2
            )

    @classmethod
    def load(cls, path: Path, capture_all: bool, device) -> "FeatureStats | None":
        """The stats in `path`, or None when they lack the vectors this caller needs, or (with a warning) when the
        file is not what `save` writes; the statistics are then computed again."""
        try:
            problem = _layout_problem(path)
            if problem is None:
                with np.load(path, allow_pickle=False) as data:
                    if capture_all and "all" not in data:
                        return None
                    stats = cls(int(data["sum"].shape[0]), capture_all, device)
                    stats.sum.copy_(torch.from_numpy(data["sum"]))
                    stats.outer.copy_(torch.from_numpy(data["outer"]))
                    stats.count = int(data["count"])
                    stats.all = torch.from_numpy(data["all"]).to(device) if capture_all else None
                return stats
        except _UNREADABLE as error:
            problem = f"cannot be read ({shorten(error, 200)})"
        warnings.warn(f"{shorten(path)}: cached statistics {problem}; computing them again", stacklevel=2)
        return None


def _layout_problem(path: Path) -> str | None:
    """What is wrong with a statistics file, judged from its zip directory and .npy headers before any array is
    read (so a small file cannot declare a huge array): None when it holds what `save` writes, with every member
    stored uncompressed at exactly the size its header declares."""
    with zipfile.ZipFile(path) as archive:
        headers = {}
        for info in archive.infolist():
            if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1:
                return "are compressed or encrypted, which save never does"
            with archive.open(info) as member:
                version = np.lib.format.read_magic(member)
                read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
                shape, _fortran, dtype = read(member)
                if member.tell() + math.prod(shape) * dtype.itemsize != info.file_size:
                    return f"declare a {info.filename} of another size than the file holds"
            headers[info.filename.removesuffix(".npy")] = (shape, dtype)
    sum_shape = headers.get("sum", ((), None))[0]
    dim = sum_shape[0] if len(sum_shape) == 1 else 0
    wanted = {"sum": ((dim,), np.float64), "outer": ((dim, dim), np.float64), "count": ((), np.int64)}
    if dim == 0 or any(headers.get(name) != (shape, np.dtype(kind)) for name, (shape, kind) in wanted.items()):
        return "do not hold the sums and count of feature vectors"
    if "all" in headers and (len(headers["all"][0]) != 2 or headers["all"][0][1] != dim):
        return "hold feature vectors of another size"
    return None


def cache_path(cache_dir: Path, name: str, key: dict) -> Path:
    """<cache>/stats/<dataset name>-<hash of the key>.npz; the key holds content hash, protocol, subset and count."""
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:20]
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in str(name))[:40]
    return cache_dir / "stats" / f"{safe}-{digest}.npz"
