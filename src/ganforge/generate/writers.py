"""Files written by `ganforge generate`, each atomically (a temporary file in the same folder, fsync, rename; see
ganforge.durable): PNG images, grids, and looping animations (mp4 through imageio-ffmpeg, the `video` extra; else
WebP or GIF through Pillow), every image first rounded to uint8 and brought to the size asked for."""

import dataclasses
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
from ganforge.generate.options import MAX_GIF_FPS
from ganforge.generate.sizes import shown_size

FILTERS = {"lanczos": PIL.Image.Resampling.LANCZOS, "nearest": PIL.Image.Resampling.NEAREST}


def png_bytes(array: np.ndarray) -> bytes:
    """[H, W, C] uint8 (C 1 or 3) -> PNG file bytes (no timestamp or other varying metadata)."""
    buffer = io.BytesIO()
    _pil(array).save(buffer, format="PNG")
    return buffer.getvalue()


def hwc(images: torch.Tensor) -> np.ndarray:
    """Generator output [N, C, H, W] in [-1, 1] -> uint8 [N, H, W, C], rounded as every saved image is."""
    return to_uint8(images).permute(0, 2, 3, 1).numpy()


@dataclasses.dataclass(frozen=True)
class Pixels:
    """Generator output [N, C, H, W] in [-1, 1] -> the uint8 images [N, h, w, C] that files hold: rounded as every
    saved image is, then resampled by Lanczos' filter or nearest neighbour so that the short side is `size` and the
    aspect is kept (sizes.shown_size; None: as made)."""

    size: int | None
    resize: str

    def shape_of(self, made: tuple[int, int]) -> tuple[int, int]:
        """(h, w) of the images in the files for images made (H, W)."""
        return shown_size(made, self.size)

    def __call__(self, images: torch.Tensor) -> np.ndarray:
        return self.arrays(hwc(images))

    def arrays(self, arrays: np.ndarray) -> np.ndarray:
        """uint8 images [N, H, W, C] as made -> as the files hold them."""
        height, width = self.shape_of((arrays.shape[1], arrays.shape[2]))
        if (height, width) == arrays.shape[1:3]:
            return arrays
        return np.stack([self._resized(array, height, width) for array in arrays])

    def _resized(self, array: np.ndarray, height: int, width: int) -> np.ndarray:
        image = _pil(array).resize((width, height), FILTERS[self.resize])
        return np.asarray(image).reshape(height, width, array.shape[2])


def _pil(array: np.ndarray) -> PIL.Image.Image:
    """[H, W, C] uint8 (C 1 or 3) as a Pillow image (L or RGB)."""
    return PIL.Image.fromarray(array[:, :, 0] if array.shape[2] == 1 else array)


def write_images(outdir: Path, arrays: np.ndarray, names) -> None:
    """uint8 images [N, H, W, C] -> one PNG each, named by `names`."""
    for array, name in zip(arrays, names, strict=True):
        replace_file(outdir / name, png_bytes(array))


def tile(arrays: np.ndarray, rows: int, columns: int) -> np.ndarray:
    """uint8 images [cells * T, H, W, C], cell by cell (T frames of cell 0, then of cell 1, ... row-major) ->
    T frames [T, rows * H, columns * W, C] with cell k at row k // columns, column k % columns."""
    _, h, w, c = arrays.shape
    cells = arrays.reshape(rows, columns, -1, h, w, c)
    return cells.transpose(2, 0, 3, 1, 4, 5).reshape(-1, rows * h, columns * w, c)  # [T, rows, H, columns, W, C]


class Canvas:
    """A grid of equal cells of `cell` = (height, width) pixels, row-major, black where nothing is pasted, held once
    (as Pillow's image: the PNG encoder streams it to the file without another copy)."""

    def __init__(self, rows: int, columns: int, cell: tuple[int, int], channels: int):
        self.columns, self.cell = columns, cell
        height, width = cell
        self.image = PIL.Image.new("L" if channels == 1 else "RGB", (columns * width, rows * height), 0)

    def paste(self, first: int, arrays: np.ndarray) -> None:
        """uint8 images [N, height, width, C] of the cell's size into cells first, first + 1, ... (row-major)."""
        height, width = self.cell
        for i, array in enumerate(arrays, start=first):
            assert array.shape[:2] == self.cell, (array.shape, self.cell)
            row, col = divmod(i, self.columns)
            self.image.paste(_pil(array), (col * width, row * height))

    def write(self, path: Path) -> None:
        with replacing(path) as tmp:
            self.image.save(tmp, format="PNG")

    def png_bytes(self) -> bytes:
        """The bytes `write` puts in the file (the same encoder and settings)."""
        buffer = io.BytesIO()
        self.image.save(buffer, format="PNG")
        return buffer.getvalue()


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


def check_animation(container: str, fps: float, width: int, height: int) -> None:
    """UserError for what the container cannot hold: H.264 in yuv420p (mp4) needs an even width and height, GIF
    at most MAX_GIF_FPS frames per second."""
    problems = []
    if container == "mp4" and (width % 2 or height % 2):
        problems.append(
            f"--size: an mp4 frame must have an even width and height (H.264 in yuv420p), this one is "
            f"{width}x{height}; use an even --size, or --interp-format webp"
        )
    if container == "gif" and fps > MAX_GIF_FPS:
        problems.append(
            f"--fps {fps:g}: GIF stores frame times in hundredths of a second and players slow frames shorter than "
            f"20 ms; use --fps {MAX_GIF_FPS} or less, or webp or mp4"
        )
    if problems:
        raise UserError(*problems)


def write_animation(path: Path, frame_batches, fps: float) -> None:
    """Batches of frames [T, H, W, C] uint8 -> a looping animation at `path`, its format taken from the suffix.
    mp4 frames stream to ffmpeg; Pillow needs them all at once."""
    with replacing(path) as tmp:
        if path.suffix == ".mp4":
            _write_mp4(tmp, frame_batches, fps)
        else:
            _write_pillow(tmp, path.suffix[1:], frame_batches, fps)


def animation_bytes(container: str, frame_batches, fps: float) -> bytes:
    """The bytes `write_animation` puts in a .webp or .gif file, made in memory (mp4 streams to ffmpeg's file)."""
    assert container in ("webp", "gif"), container
    buffer = io.BytesIO()
    _write_pillow(buffer, container, frame_batches, fps)
    return buffer.getvalue()


def _write_mp4(path: Path, frame_batches, fps: float) -> None:
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


def _write_pillow(file, container: str, frame_batches, fps: float) -> None:
    """Every frame to `file` (a path or a binary file) as an animated `container` (webp or gif)."""
    images = [_pil(frame) for frames in frame_batches for frame in frames]
    kwargs = {"lossless": True} if container == "webp" else {}
    images[0].save(
        file,
        format=container.upper(),
        save_all=True,
        append_images=images[1:],
        duration=round(1000 / fps),
        loop=0,
        **kwargs,
    )
