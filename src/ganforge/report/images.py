"""Sample grids as data URIs: the newest large, older ones as thumbnails, each in its smaller encoding.

A 1024-pixel run's grid is a 4096x2048 PNG of several megabytes; a long run has hundreds of them. The newest is
scaled to at most NEWEST_WIDTH pixels, older ones to THUMB_WIDTH, and at most MAX_GRIDS are shown (evenly spread,
newest and oldest always), so the page stays a few megabytes at most.
"""

import base64
import io
from pathlib import Path

import PIL.Image

NEWEST_WIDTH = 1024
THUMB_WIDTH = 256
MAX_GRIDS = 48
JPEG_QUALITY = 88


def _encode(image: PIL.Image.Image) -> tuple[str, bytes]:
    """PNG or JPEG, whichever is smaller (PNG wins for tiny or flat grids, JPEG for photographs)."""
    encoded = []
    for fmt, options in (("PNG", {"optimize": True}), ("JPEG", {"quality": JPEG_QUALITY})):
        buffer = io.BytesIO()
        image.save(buffer, format=fmt, **options)
        encoded.append((fmt.lower(), buffer.getvalue()))
    return min(encoded, key=lambda item: len(item[1]))


def grid_data_uri(path: Path, max_width: int) -> tuple[str, int]:
    """`path` scaled down (never up) to `max_width` pixels wide, as a data URI; and its width."""
    with PIL.Image.open(path) as opened:
        image = opened.convert("L" if opened.mode in ("L", "I;16", "1") else "RGB")
    if image.width > max_width:
        height = max(1, round(image.height * max_width / image.width))
        image = image.resize((max_width, height), PIL.Image.Resampling.LANCZOS)
    fmt, data = _encode(image)
    return f"data:image/{fmt};base64," + base64.b64encode(data).decode("ascii"), image.width


def pick_grids(grids: list, limit: int = MAX_GRIDS) -> list:
    """At most `limit` items, evenly spread over `grids` (oldest first), the first and last always kept."""
    if len(grids) <= limit:
        return list(grids)
    step = (len(grids) - 1) / (limit - 1)
    return [grids[round(i * step)] for i in range(limit)]
