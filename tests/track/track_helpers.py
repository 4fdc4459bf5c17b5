"""The tiny data and training command of the trackers' end-to-end tests and their overhead benchmark."""

from pathlib import Path

import numpy as np
import PIL.Image

from ganforge.data.build import BuildOptions, build


def squares_zip(root: Path, count: int = 16) -> Path:
    """`count` distinct grey 8x8 pictures of a bright square, as root/squares.zip (the PNGs in root/src)."""
    src = root / "src"
    src.mkdir(parents=True)
    for i in range(count):
        image = np.full((8, 8), 60, np.uint8)
        image[i % 4 : i % 4 + 4, i // 4 % 4 : i // 4 % 4 + 4] = 200
        image[-1, -1] = i  # every image distinct (the dataset tool refuses exact duplicates)
        PIL.Image.fromarray(image).save(src / f"{i:02d}.png")
    build(src, root / "squares.zip", BuildOptions(channels=1, transform="none", workers=0))
    return root / "squares.zip"


def squares_shards(root: Path) -> Path:
    """The pictures of `squares_zip(root)` as a shard dataset too, root/shards (a few shards of ~2 KB)."""
    squares_zip(root)
    build(root / "src", root / "shards", BuildOptions(channels=1, transform="none", workers=0, format="shards",
                                                      shard_size="2KB"))  # fmt: skip
    return root / "shards"


def train_args(
    data: Path | str, outdir: Path, kimg: float, *extra: str, snap: int = 1, report: bool = False
) -> list[str]:
    """`ganforge train` of a tiny run on CPU: ticks of one batch of 8, a snapshot every `snap` ticks, report.html
    only with `report`."""
    return ["train", "--data", str(data), "--outdir", str(outdir), "--cfg", "tiny", "--kimg", f"{kimg:g}",
            "--batch", "8", "--tick", "0.008", "--snap", str(snap), "--workers", "0", "--device", "cpu",
            "--aug", "noaug", *([] if report else ["--no-report"]), *extra]  # fmt: skip
