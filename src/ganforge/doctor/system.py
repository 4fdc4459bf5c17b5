"""Host checks: CPU cores, memory, /dev/shm, free disk at --outdir, and reading the dataset given with --data."""

import os
import shutil
import time
from pathlib import Path

from ganforge.doctor import report as r
from ganforge.errors import UserError
from ganforge.memory import parse_meminfo
from ganforge.urls import public_url

SECTION = "system"
GIB = 1024**3
CORES_PER_GPU = 4  # the training process plus a few DataLoader workers per GPU
MIN_AVAILABLE_GIB = 4
# DataLoader workers hand batches over in shared memory; Docker's default /dev/shm of 64 MiB makes them die with
# "bus error" (PyTorch's multiprocessing notes). 1 GiB holds a few prefetched batches of 256 px images.
MIN_SHM_GIB = 1
MIN_DISK_GIB, LOW_DISK_GIB = 1, 10  # one run's checkpoints and snapshots need a few GiB
SLOW_READ_IMAGES_PER_S = 50


def usable_cores() -> int:
    """Cores this process may run on (its affinity mask, which containers and schedulers narrow)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def cores_check(usable: int, total: int, gpu_count: int) -> r.Check:
    cid, title = "system.cpu_cores", "CPU cores"
    value = f"{usable} usable of {total}"
    need = CORES_PER_GPU * gpu_count
    if gpu_count and usable < need:
        return r.warning(
            cid,
            SECTION,
            title,
            f"{value}; {gpu_count} GPU(s) want >= {need} for data loading",
            "give the job more cores, or lower --workers so loaders do not starve the training processes",
            usable=usable,
            total=total,
        )
    return r.ok(cid, SECTION, title, value, usable=usable, total=total)


def memory_check(meminfo: Path = Path("/proc/meminfo")) -> r.Check:
    cid, title = "system.memory", "memory"
    if not meminfo.is_file():
        return r.skipped(cid, SECTION, title, f"{meminfo} not found (not Linux)")
    info = parse_meminfo(meminfo.read_text())
    total, available = info["MemTotal"], info.get("MemAvailable", info["MemTotal"])
    value = f"{available / GIB:.1f} GiB available of {total / GIB:.1f} GiB"
    if available < MIN_AVAILABLE_GIB * GIB:
        return r.warning(
            cid,
            SECTION,
            title,
            value,
            f"free memory (>= {MIN_AVAILABLE_GIB} GiB) or lower --workers",
            total=total,
            available=available,
        )
    return r.ok(cid, SECTION, title, value, total=total, available=available)


def shm_check(shm: Path = Path("/dev/shm")) -> r.Check:
    cid, title = "system.shm", "/dev/shm"
    if not shm.is_dir():
        return r.skipped(cid, SECTION, title, f"{shm} does not exist on this system")
    usage = shutil.disk_usage(shm)
    value = f"{usage.free / GIB:.1f} GiB free of {usage.total / GIB:.1f} GiB"
    data = {"total": usage.total, "free": usage.free}
    if usage.total < MIN_SHM_GIB * GIB:
        return r.warning(
            cid,
            SECTION,
            title,
            f"{value}: too small for DataLoader workers",
            "in Docker add --shm-size=16g (or --ipc=host); otherwise run training with --workers 0",
            **data,
        )
    return r.ok(cid, SECTION, title, value, **data)


def _existing_ancestor(path: Path) -> Path:
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def disk_check(outdir: Path) -> r.Check:
    """Free space and write permission where runs will be written (its nearest existing folder if it is new)."""
    cid, title = "system.disk", "disk at --outdir"
    place = _existing_ancestor(outdir)
    if not place.is_dir():
        return r.failure(cid, SECTION, title, f"{place} is not a folder", "--outdir: pass a folder")
    usage = shutil.disk_usage(place)
    value = f"{usage.free / GIB:.1f} GiB free at {place}"
    data = {"path": str(place), "free": usage.free, "total": usage.total}
    if not os.access(place, os.W_OK):
        return r.failure(cid, SECTION, title, f"{place} is not writable", "--outdir: pass a writable folder", **data)
    if usage.free < MIN_DISK_GIB * GIB:
        return r.failure(cid, SECTION, title, value, "free disk space or pass another --outdir", **data)
    if usage.free < LOW_DISK_GIB * GIB:
        return r.warning(cid, SECTION, title, value, f"keep >= {LOW_DISK_GIB} GiB free for checkpoints", **data)
    return r.ok(cid, SECTION, title, value, **data)


def system_checks(outdir: Path, gpu_count: int) -> list[r.Check]:
    cores = cores_check(usable_cores(), os.cpu_count() or 1, gpu_count)
    return [cores, memory_check(), shm_check(), disk_check(outdir)]


def read_rate(dataset, max_images: int, max_seconds: float) -> tuple[int, float]:
    """Decode images in order until `max_images` or `max_seconds`, checking each against the dataset's shape."""
    shape = (dataset.channels, dataset.resolution, dataset.resolution)
    count, start = 0, time.perf_counter()
    for index in range(min(len(dataset), max_images)):
        image, label = dataset[index]
        if tuple(image.shape) != shape or tuple(label.shape) != (dataset.label_dim,):
            raise ValueError(
                f"item {index}: image {tuple(image.shape)} and label {tuple(label.shape)}, "
                f"expected {shape} and ({dataset.label_dim},)"
            )
        count += 1
        if time.perf_counter() - start >= max_seconds:
            break
    return count, time.perf_counter() - start


def data_checks(path: str | Path, quick: bool) -> list[r.Check]:
    """Open --data with the training reader, then time decoding."""
    from ganforge.data import open_dataset

    cid, title = "data.open", "dataset"
    try:
        dataset = open_dataset(path)
    except UserError as error:
        fix = "pass a folder of images, an image zip, or an archive made by `ganforge dataset build`"
        return [r.failure(cid, "data", title, "; ".join(error.problems), fix, path=public_url(str(path)))]
    value = (
        f"{dataset.name}: {len(dataset)} images, {dataset.channels}x{dataset.resolution}x{dataset.resolution}, "
        f"{dataset.label_dim} labels, format {dataset.format}"
    )
    info = {"path": public_url(str(path)), "images": len(dataset), "resolution": dataset.resolution}
    info.update(channels=dataset.channels, label_dim=dataset.label_dim, format=dataset.format)
    if len(dataset) == 0:
        return [r.failure(cid, "data", title, value, "--data: add images to the dataset", **info)]
    opened = r.ok(cid, "data", title, value, **info)
    return [opened, *r.guarded("data.read", "data", "dataset read rate", _READ_FIX, lambda: [_rate(dataset, quick)])]


_READ_FIX = "rebuild the dataset with `ganforge dataset build`, which names every bad file"


def _rate(dataset, quick: bool) -> r.Check:
    count, seconds = read_rate(dataset, 64 if quick else 1024, 1.0 if quick else 5.0)
    rate = count / seconds
    value = f"{rate:.0f} images/s decoded by one process ({count} images)"
    data = {"images": count, "seconds": seconds, "images_per_second": rate}
    if rate < SLOW_READ_IMAGES_PER_S:
        fix = "convert with `ganforge dataset build` to the fast format, or copy the data to a local disk"
        return r.warning("data.read", "data", "dataset read rate", value, fix, **data)
    return r.ok("data.read", "data", "dataset read rate", value, **data)
