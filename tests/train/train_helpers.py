"""Shared helpers for the training tests: a tiny generated dataset and fast CLI option sets."""

import contextlib
import random
import threading
from pathlib import Path

import numpy as np
import PIL.Image

from ganforge.config.architecture import architecture_of
from ganforge.interop.pretrained import PretrainedFacts
from ganforge.nets.configured import network_arguments
from ganforge.train.options import TrainOptions
from ganforge.train.resume import Found, Source


def make_dataset(folder: Path, count: int = 32, res: int = 8, channels: int = 1, brightness: float = 0.5) -> Path:
    """`count` PNGs of a bright square on a darker background at random places (deterministic)."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(count):
        img = np.full((res, res, channels), int(255 * brightness * 0.6), np.uint8)
        x, y = rng.integers(0, res // 2, 2)
        img[y : y + res // 2, x : x + res // 2] = int(255 * brightness)
        img[-1, -1] = i  # every image distinct (the dataset tool refuses exact duplicates)
        PIL.Image.fromarray(img[:, :, 0] if channels == 1 else img).save(folder / f"{i:03d}.png")
    return folder


def tiny_args(
    data: Path, outdir: Path, kimg: float = 0.032, batch: int = 8, report: bool = False, **extra
) -> list[str]:
    """CLI arguments for a few-step tiny run on CPU with every artifact written each tick (the HTML report only with
    `report`: it is the slowest artifact and has its own tests)."""
    args = ["train", "--data", str(data), "--outdir", str(outdir), "--cfg", "tiny", "--kimg", f"{kimg:g}",
            "--batch", str(batch), "--tick", f"{batch * 2 / 1000:g}", "--snap", "1", "--workers", "0",
            "--device", "cpu", "--aug", "noaug", *([] if report else ["--no-report"])]  # fmt: skip
    for key, value in extra.items():
        args += [f"--{key.replace('_', '-')}"] + ([] if value is True else [str(value)])
    return args


def tiny_options(data: Path, outdir: Path, kimg: float = 0.032, batch: int = 8, report: bool = False,
                 **extra) -> TrainOptions:  # fmt: skip
    """The same run as `tiny_args`, as the TrainOptions `ganforge.train.resolve` takes."""
    base = {"data": str(data), "outdir": str(outdir), "preset": "tiny", "kimg": kimg, "batch": batch,
            "tick": batch * 2 / 1000, "snap": 1, "workers": 0, "device": "cpu", "aug": "noaug",
            "no_report": not report}  # fmt: skip
    return TrainOptions(**(base | extra))


def weights_found(resume: str, cfg) -> Found:
    """What `observe` finds for `--resume FILES` naming pretrained files of `cfg`'s architecture, G_ema and D (no
    files made, no hashes: for resolving options without reading any)."""
    g_arch, d_arch = network_arguments(architecture_of(cfg))
    generator = g_arch.pop("generator")
    facts = PretrainedFacts(generator, g_arch, d_arch, ("G_ema", "D"), None, (), ())
    return Found(Source("weights", resume, pretrained=facts))


def final_checkpoint(outdir: Path) -> Path:
    """The newest checkpoint of the one run in `outdir`."""
    (run,) = outdir.iterdir()
    return sorted((run / "checkpoints").glob("ckpt-*"))[-1]


@contextlib.contextmanager
def others_drawing():
    """A thread drawing from Python's `random` and NumPy's global generator every millisecond meanwhile, as other
    code sharing a training process may (a client library's retry jitter, a server's request threads)."""
    stop = threading.Event()

    def draw():
        while not stop.wait(0.001):
            random.random(), np.random.random()

    thread = threading.Thread(target=draw, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def continued_equals_straight(train, folder: Path, kimg: float, stop_kimg: float = 0.008) -> Path:
    """`train(outdir, kimg)` once for `kimg` into folder/straight, and into folder/stopped for `stop_kimg` then
    `kimg` (the same command, longer: it continues from the checkpoint at the stop); the two final checkpoints are
    byte for byte the same, though the straight run shared its process with `others_drawing` (where `train` runs in
    this process). Returns the continued run's final checkpoint."""
    with others_drawing():
        train(folder / "straight", kimg)
    train(folder / "stopped", stop_kimg)
    train(folder / "stopped", kimg)
    straight, resumed = final_checkpoint(folder / "straight"), final_checkpoint(folder / "stopped")
    assert straight.name == resumed.name == f"ckpt-{round(kimg * 1000):09d}"
    (run,) = (folder / "stopped").iterdir()
    assert f"resuming at {stop_kimg:g} kimg" in (run / "log.txt").read_text()
    for name in ("tensors.safetensors", "state.json"):
        assert (straight / name).read_bytes() == (resumed / name).read_bytes(), name
    return resumed
