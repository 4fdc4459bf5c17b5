"""The options of `ganforge dataset build|info|verify`, each declared on the field it sets (`ganforge.option`): the
commands' click options and the value checks are derived from the declarations. `dataset verify` takes build's own
--workers. Imports nothing heavy (no PIL, numpy or torch), so the CLI can take its declarations from here; the
choices are those of the readers and writers that carry them out (data/images.py, data/shards.py: tested equal)."""

import dataclasses
import re

from ganforge.config.sections import MAX_WORKERS
from ganforge.durable import shorten
from ganforge.errors import UserError
from ganforge.option import Declared, Option, Range, declared, given, option, value_problems

FORMATS = ("zip", "fast", "shards")
TRANSFORMS = ("center-crop", "center-crop-wide", "pad", "none")
RESIZE_FILTERS = ("box", "lanczos", "bicubic")
ENCODINGS = ("png", "u8")  # of a shard's images: PNG, or raw pixels
ON_ERROR = ("fail", "skip")
MAX_IMAGES = 10**9
IMAGE_SIZE = re.compile(r"\s*(\d{1,6})\s*(?:[xX]\s*(\d{1,6})\s*)?")
IMAGES, DECODING, OUTPUT = "Images", "Decoding", "Output"  # sections of the commands' help


@dataclasses.dataclass(frozen=True, kw_only=True)
class BuildOptions:
    """The options of `dataset build`; see `ganforge dataset build --help` for each."""

    resolution: int | tuple[int, int] | None = option(  # a square side, or (width, height)
        IMAGES,
        "Output side R (square), or WxH (e.g. 512x256, StyleGAN2 only), powers of two; required unless --transform "
        "none.",
        default=None,
        kind=str,
    )
    transform: str = option(
        IMAGES,
        "center-crop: central square; center-crop-wide: central 2:1 band padded to a square; pad: whole image on "
        "black; none: images must already be RxR. Never upscales: smaller images are bad files.",
        default="center-crop",
        choices=TRANSFORMS,
    )
    resize_filter: str = option(
        IMAGES, "The filter that resizes images to --resolution.", default="lanczos", choices=RESIZE_FILTERS
    )
    labels: str = option(  # auto | folders | source | none | path of a CSV file (ganforge.data.labelling)
        IMAGES,
        "folders (sub-folder names), source (SRC's dataset.json: classes or label vectors), none, or PATH.csv: "
        "`file,label` rows (classes), or a header `file,NAME1,NAME2,...` and one number per column (label vectors, "
        "multi-hot or continuous); auto: source when SRC has labels, else none.",
        default="auto",
    )
    channels: int = option(IMAGES, "1: greyscale, 3: RGB.", default=3, choices=(1, 3))
    max_images: int | None = option(
        IMAGES,
        "Use only the first N files (sorted by path).",
        default=None,
        range=Range(1, MAX_IMAGES, whole=True),
    )
    format: str | None = option(  # None: zip when DEST ends in .zip, else fast
        OUTPUT,
        "zip (NVlabs' layout), fast (pre-decoded, memory-mapped), or shards (a folder of WebDataset tar shards and "
        "index.json, to stream from object storage).",
        default=None,
        choices=FORMATS,
        shown_default="zip if DEST ends in .zip, else fast",
    )
    shard_size: str | None = option(  # about this many bytes a shard (shards.parse_size; None: 1GB)
        OUTPUT, "--format shards: about this much a shard, e.g. 1GB, 256MB.", default=None, shown_default="1GB"
    )
    shard_encoding: str = option(  # png, or u8 (raw pixels: no decoding when read, larger)
        OUTPUT,
        "--format shards: png, or u8 (raw pixels: about 3x larger, nothing to decode when training).",
        default="png",
        choices=ENCODINGS,
    )
    on_error: str = option(
        OUTPUT,
        "fail: write nothing and list every bad file; skip: build from the good ones, list the rest in "
        "DEST.report.json.",
        default="fail",
        choices=ON_ERROR,
    )
    workers: int | None = option(  # None: every CPU this process may use
        DECODING,
        "Decoding processes (0: none).",
        default=None,
        range=Range(0, MAX_WORKERS, whole=True),
        shown_default="all CPUs",
    )

    @classmethod
    def parse(cls, *, resolution: str | None = None, **fields) -> "BuildOptions":
        """From the CLI's values (None: not given; --resolution as typed: R or WxH)."""
        return cls(**given(fields), resolution=None if resolution is None else image_size(resolution))

    def value_problems(self) -> list[str]:
        """Each value its declaration does not accept."""
        return value_problems(BUILD_OPTIONS, self)


def image_size(text: str) -> int | tuple[int, int]:
    """`256` -> 256, `512x256` -> (512, 256) (width, height); the limits are checked with the other options."""
    match = IMAGE_SIZE.fullmatch(text)
    if match is None:
        raise UserError(f"--resolution: {shorten(text, 40)!r} is not a side R or a size WxH such as 512x256")
    width, height = int(match.group(1)), match.group(2)
    return width if height is None else (width, int(height))


# Every option of `ganforge dataset build`, in the order of its fields; `verify` decodes with build's --workers.
BUILD_OPTIONS = declared(BuildOptions)
VERIFY_OPTIONS = [d for d in BUILD_OPTIONS if d.name == "workers"]
INFO_OPTIONS = [Declared("", Option(OUTPUT, "Print one JSON object.", flag="--json", name="as_json", kind=bool), None)]
