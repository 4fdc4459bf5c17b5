"""The files `ganforge project` writes for each target, into OUTDIR/<target's name>/, each atomically:

- projected_w.npz: the latent in the official layout, `w` float32 [1, num_ws, w_dim] (what NVlabs' `gen_images.py
  --projected-w` reads), and the optimised noise maps as `noise.<buffer>` [1, H, W] beside it (ignored by readers
  that take `w` only; `ganforge generate --projected-w` uses them, so it renders proj.png exactly);
- target.png (the target as projected: cropped and resized to the network), proj.png, and compare.png (target,
  projection and, with --tune-g, the tuned projection side by side);
- with --tune-g: G_tuned.safetensors (a snapshot of the tuned generator with the pivot's noise maps) and
  proj_tuned.png;
- with --video: proj.mp4 (or .webp / .gif without the video extra), the optimisation as it went, beside the target;
- projection.json: the settings, the perceptual distance at every step, and the final PSNR and SSIM.
"""

import json
from pathlib import Path

import numpy as np
import torch

from ganforge.durable import check_destination, replace_file
from ganforge.generate import writers
from ganforge.projected import write_projected_w
from ganforge.snapshot import save_snapshot

NPZ, TARGET, PROJ, PROJ_TUNED, COMPARE, TUNED, RECORD = (
    "projected_w.npz",
    "target.png",
    "proj.png",
    "proj_tuned.png",
    "compare.png",
    "G_tuned.safetensors",
    "projection.json",
)
VIDEO_STEM = "proj"
MAX_VIDEO_FRAMES = 300  # every step up to this many, else evenly spaced steps: 10 s at 30 frames per second
VIDEO_FPS = 30


def file_names(tuned: bool, video: str | None) -> list[str]:
    """The files of one target, for checking every destination before any work."""
    names = [NPZ, TARGET, PROJ, COMPARE, RECORD]
    names += [TUNED, PROJ_TUNED] if tuned else []
    return names + ([f"{VIDEO_STEM}.{video}"] if video else [])


def check_destinations(folder: Path, tuned: bool, video: str | None) -> None:
    for name in file_names(tuned, video):
        check_destination(folder / name)


def write_latent(folder: Path, ws: torch.Tensor, noise: dict[str, torch.Tensor]) -> None:
    """`ws` [1, num_ws, w_dim] and the noise maps {buffer: [1, H, W]} as projected_w.npz."""
    write_projected_w(folder / NPZ, ws.cpu().numpy(), {name: value.cpu().numpy() for name, value in noise.items()})


def write_images(folder: Path, target: np.ndarray, projected: np.ndarray, tuned: np.ndarray | None) -> None:
    """uint8 [H, W, C] images: each alone, and side by side in compare.png."""
    replace_file(folder / TARGET, writers.png_bytes(target))
    replace_file(folder / PROJ, writers.png_bytes(projected))
    row = [target, projected]
    if tuned is not None:
        replace_file(folder / PROJ_TUNED, writers.png_bytes(tuned))
        row.append(tuned)
    replace_file(folder / COMPARE, writers.png_bytes(np.concatenate(row, axis=1)))


def write_tuned(folder: Path, G, meta: dict) -> None:
    save_snapshot(folder / TUNED, G, meta)


def write_record(folder: Path, record: dict) -> None:
    replace_file(folder / RECORD, (json.dumps(record, indent=2) + "\n").encode())


def video_steps(steps: int) -> list[int]:
    """The steps whose w become frames: every one, or MAX_VIDEO_FRAMES evenly spaced ones ending at the last."""
    if steps <= MAX_VIDEO_FRAMES:
        return list(range(steps))
    return [round(i * (steps - 1) / (MAX_VIDEO_FRAMES - 1)) for i in range(MAX_VIDEO_FRAMES)]


def write_video(folder: Path, container: str, frames) -> None:
    """`frames`: batches of uint8 [T, H, W, C] (the target beside the projection at a step)."""
    writers.write_animation(folder / f"{VIDEO_STEM}.{container}", frames, VIDEO_FPS)
