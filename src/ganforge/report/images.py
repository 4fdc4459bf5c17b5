"""Sample grids as data URIs: the newest large, older ones as thumbnails, each in its smaller encoding.

A 1024-pixel run's grid is a 4096x2048 PNG of several megabytes; a long run has hundreds of them. The newest is
scaled to at most NEWEST_WIDTH pixels, older ones to THUMB_WIDTH, and at most MAX_GRIDS are shown (evenly spread,
newest and oldest always), so the page stays a few megabytes at most.
"""

import base64
import io
import warnings
from pathlib import Path

import PIL.Image

from ganforge.durable import shorten
from ganforge.report.rundata import read_regular

NEWEST_WIDTH = 1024
THUMB_WIDTH = 256
MAX_GRIDS = 48
JPEG_QUALITY = 88
# ganforge's grids are at most 4096x2048 (4 columns of 1024 px), NVlabs' 7680x4320-ish: a grid beyond 64 Mpx, or a
# file beyond what such a grid takes uncompressed, is not a sample grid (and would cost seconds and gigabytes).
MAX_GRID_PIXELS = 64 << 20
MAX_GRID_BYTES = 256 << 20
# What Pillow raises for a file that is not a PNG it can decode (truncated, corrupt chunks, bad sizes).
UNREADABLE = (OSError, SyntaxError, ValueError, EOFError, PIL.Image.DecompressionBombError)


def _encode(image: PIL.Image.Image) -> tuple[str, bytes]:
    """PNG or JPEG, whichever is smaller (PNG wins for tiny or flat grids, JPEG for photographs)."""
    encoded = []
    for fmt, options in (("PNG", {"optimize": True}), ("JPEG", {"quality": JPEG_QUALITY})):
        buffer = io.BytesIO()
        image.save(buffer, format=fmt, **options)
        encoded.append((fmt.lower(), buffer.getvalue()))
    return min(encoded, key=lambda item: len(item[1]))


def grid_data_uri(path: Path, max_width: int) -> tuple[str, int] | None:
    """`path` scaled down (never up) to `max_width` pixels wide, as a data URI; and its width. None, with a warning,
    when it is not a grid that can be shown (missing, not a regular file, not a decodable image, too large)."""
    data = read_regular(path, MAX_GRID_BYTES, cut=False)  # warns when it is not a regular file or too large
    if data is None:
        return None
    image, problem = _decode(data)
    if problem is not None:
        warnings.warn(f"{shorten(path)}: {problem}; left out of the report", stacklevel=2)
        return None
    if image.width > max_width:
        height = max(1, round(image.height * max_width / image.width))
        image = image.resize((max_width, height), PIL.Image.Resampling.LANCZOS)
    fmt, data = _encode(image)
    return f"data:image/{fmt};base64," + base64.b64encode(data).decode("ascii"), image.width


def _decode(data: bytes) -> tuple[PIL.Image.Image | None, str | None]:
    """(the image in L or RGB, None), or (None, what is wrong). Its size is checked from the header, before the
    pixels are decoded."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", PIL.Image.DecompressionBombWarning)  # too large: refused like any other
        try:
            with PIL.Image.open(io.BytesIO(data)) as opened:
                if opened.width * opened.height > MAX_GRID_PIXELS:
                    return None, f"is {opened.width}x{opened.height} pixels, more than a sample grid has"
                return opened.convert("L" if opened.mode in ("L", "I;16", "1") else "RGB"), None
        except (*UNREADABLE, PIL.Image.DecompressionBombWarning) as error:
            return None, f"is not a readable image ({shorten(error, 100)})"


def pick_grids(grids: list, limit: int = MAX_GRIDS) -> list:
    """At most `limit` items, evenly spread over `grids` (oldest first), the first and last always kept."""
    if len(grids) <= limit:
        return list(grids)
    step = (len(grids) - 1) / (limit - 1)
    return [grids[round(i * step)] for i in range(limit)]
