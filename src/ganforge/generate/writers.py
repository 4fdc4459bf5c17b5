"""Files written by `ganforge generate`, each atomically (a temporary file in the same folder, fsync, rename; see
ganforge.durable): PNG images, grids, and looping animations (mp4 through imageio-ffmpeg, the `video` extra; else
WebP or GIF through Pillow)."""

import importlib.util
import io
from pathlib import Path

import numpy as np
import PIL.features
import PIL.Image
import torch

from ganforge.data.loader import to_uint8
from ganforge.durable import replace_file, replacing
from ganforge.errors import UserError

FPS = 30


def png_bytes(array: np.ndarray) -> bytes:
    """[H, W, C] uint8 (C 1 or 3) -> PNG file bytes (no timestamp or other varying metadata)."""
    buffer = io.BytesIO()
    PIL.Image.fromarray(array[:, :, 0] if array.shape[2] == 1 else array).save(buffer, format="PNG")
    return buffer.getvalue()


def hwc(images: torch.Tensor) -> np.ndarray:
    """Generator output [N, C, H, W] in [-1, 1] -> uint8 [N, H, W, C], rounded as every saved image is."""
    return to_uint8(images).permute(0, 2, 3, 1).numpy()


def write_images(outdir: Path, images: torch.Tensor, names) -> None:
    for array, name in zip(hwc(images), names, strict=True):
        replace_file(outdir / name, png_bytes(array))


class Canvas:
    """A grid of equal cells, row-major, black where nothing is pasted, held once (as Pillow's image: the PNG
    encoder streams it to the file without another copy)."""

    def __init__(self, rows: int, columns: int, height: int, width: int, channels: int):
        self.columns, self.height, self.width = columns, height, width
        self.image = PIL.Image.new("L" if channels == 1 else "RGB", (columns * width, rows * height), 0)

    def paste(self, first: int, images: torch.Tensor) -> None:
        """Generator output [N, C, H, W] in [-1, 1] into cells first, first + 1, ... (row-major)."""
        for i, array in enumerate(hwc(images), start=first):
            row, col = divmod(i, self.columns)
            cell = PIL.Image.fromarray(array[:, :, 0] if array.shape[2] == 1 else array)
            self.image.paste(cell, (col * self.width, row * self.height))

    def write(self, path: Path) -> None:
        with replacing(path) as tmp:
            self.image.save(tmp, format="PNG")


def ffmpeg_available() -> bool:
    return importlib.util.find_spec("imageio_ffmpeg") is not None


def animation_format(requested: str) -> str:
    """The container for --interp-format: auto picks mp4 with the video extra, else WebP (or GIF without WebP)."""
    if requested == "auto":
        return "mp4" if ffmpeg_available() else "webp" if PIL.features.check("webp") else "gif"
    if requested == "mp4" and not ffmpeg_available():
        raise UserError("--interp-format mp4: needs the video extra: pip install 'ganforge[video]'; or use webp/gif")
    if requested == "webp" and not PIL.features.check("webp"):
        raise UserError("--interp-format webp: this Pillow has no WebP support; use gif, or mp4 with ganforge[video]")
    return requested


def write_animation(path: Path, frame_batches, fps: int = FPS) -> None:
    """Batches of frames [T, H, W, C] uint8 -> a looping animation at `path`, its format taken from the suffix.
    mp4 frames stream to ffmpeg; Pillow needs them all at once."""
    with replacing(path) as tmp:
        (_write_mp4 if path.suffix == ".mp4" else _write_pillow)(tmp, frame_batches, fps)


def _write_mp4(path: Path, frame_batches, fps: int) -> None:
    import imageio_ffmpeg

    writer = None
    for frames in frame_batches:
        if frames.shape[3] == 1:
            frames = frames.repeat(3, axis=3)  # H.264 in yuv420p is colour: grey frames become equal R, G, B
        if writer is None:
            size = (frames.shape[2], frames.shape[1])  # (width, height)
            writer = imageio_ffmpeg.write_frames(str(path), size, fps=fps, quality=8, macro_block_size=1)
            writer.send(None)  # starts ffmpeg
        for frame in frames:
            writer.send(np.ascontiguousarray(frame))
    writer.close()


def _write_pillow(path: Path, frame_batches, fps: int) -> None:
    images = [PIL.Image.fromarray(f[:, :, 0] if f.shape[2] == 1 else f) for frames in frame_batches for f in frames]
    kwargs = {"lossless": True} if path.suffix == ".webp" else {}
    images[0].save(path, save_all=True, append_images=images[1:], duration=round(1000 / fps), loop=0, **kwargs)
