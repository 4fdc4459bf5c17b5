"""What each request of `ganforge generate` holds in memory at once, and the uncompressed size of the files it writes,
from the options, the network's image size and one measured figure (budget.synthesis_peak_bytes); budget.check
refuses what does not fit."""

from ganforge.generate.budget import FRAME_COPIES
from ganforge.generate.options import GenerateOptions
from ganforge.generate.sizes import describe, shown_size
from ganforge.memory import Need


def needs_of(
    o: GenerateOptions, made: tuple[int, int], channels: int, per_image: int, cuda: bool, animation: str | None
):
    """([Need], file bytes) for `o` on a network of images `made` = (H, W) px and `channels` channels whose synthesis
    of one image peaks at `per_image` bytes; `animation` is the container of an interpolation."""
    shown_hw = shown_size(made, o.size)
    made_bytes, shown = made[0] * made[1] * channels, shown_hw[0] * shown_hw[1] * channels  # uint8 images
    held = _held(o)
    synthesized = min(o.batch, held)
    at = f" shown at {describe(shown_hw)}" if shown_hw != made else ""
    smaller = "use a smaller --batch" + (" or --grid" if o.mode == "interp" and o.grid else "")
    synthesis = synthesized * per_image
    # the float32 and uint8 copies of what one render call made, the resized images and what they are pasted into
    host = held * (made_bytes * (4 + 1) + 2 * shown)
    images = f"--batch {o.batch}: {{:,}} images of {describe(made)}"
    needs = [
        Need(images.format(synthesized) + " synthesized at once", synthesis, cuda, smaller),
        Need(images.format(held) + at, host, False, smaller),
    ]
    file_needs, disk = _files(o, shown_hw, shown, animation)
    return needs + file_needs, disk


def _held(o: GenerateOptions) -> int:
    """Images one render call makes (and the host holds): a batch; every cell of a frame of a grid of loops; the
    largest part of a style-mixing table."""
    if o.mode == "style_mix":
        rows, cols = o.style_mix
        return min(o.batch, max(len(rows), len(cols), len(rows) * len(cols)))
    if o.mode == "interp":
        return o.frames_per_batch * o.layout[0] * o.layout[1]
    return min(o.batch, o.image_count)


def _files(o: GenerateOptions, cell: tuple[int, int], shown: int, animation: str | None) -> tuple[list[Need], int]:
    """What one file holds whole in memory (a grid, a table, every frame of a Pillow animation), and the bytes of all
    files; `cell` is (H, W) of one image as written, `shown` its bytes."""
    (h, w), at = cell, describe(cell)
    if o.mode == "grid":
        r, c = o.grid
        what = f"--grid {r}x{c} at {at}: a {c * w}x{r * h} image"
        return [Need(what, r * c * shown, False, "make a smaller grid, or several")], r * c * shown
    if o.mode == "style_mix":  # a blank corner, a row of column images, a column of row images
        rows, cols = o.style_mix
        r, c = len(rows) + 1, len(cols) + 1
        what = f"--style-mix of {len(rows):,} x {len(cols):,} seeds at {at}: a {c * w}x{r * h} table"
        cells = len(rows) * len(cols) * shown if o.mix_cells else 0
        return [Need(what, r * c * shown, False, "use fewer row or column seeds")], r * c * shown + cells
    if o.mode == "interp":
        return _animation(o, cell, shown, animation)
    return [], o.image_count * shown


def _animation(o: GenerateOptions, cell: tuple[int, int], shown: int, animation: str | None) -> tuple[list[Need], int]:
    rows, cols = o.layout
    frame = rows * cols * shown
    if animation == "mp4":  # streamed to ffmpeg frame by frame
        return [], 0
    frames = f"{o.frames:,} frames of {cols * cell[1]}x{rows * cell[0]}"
    what = f"--interp {o.interp}: {frames} in one {animation} file (held at once)"
    advice = "use fewer frames, seeds or a smaller --size, or mp4 (pip install 'ganforge[video]'), which streams them"
    return [Need(what, FRAME_COPIES * o.frames * frame, False, advice)], o.frames * frame
