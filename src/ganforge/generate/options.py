"""The options of `ganforge generate` as one frozen dataclass. `GenerateOptions.parse` turns the command line's strings
into it and lists every problem at once; `check_network` adds the problems that depend on the network. Imports
nothing heavy, so the CLI can take its choices from here."""

import dataclasses
import math
import re
from pathlib import Path

from ganforge.errors import UserError

NOISE_MODES = ("const", "random", "none")
INTERP_SPACES = ("z", "w")
ANIMATION_FORMATS = ("auto", "mp4", "webp", "gif")
MAX_SEED = 2**32 - 1  # numpy.random.RandomState accepts seeds below 2**32
MAX_COUNT = 1_000_000  # images named by one option: a typo such as 0-100000000 fails fast instead of running for days
# Truncation psi: 1 is none, 0 the average image, negative values the other side of the average (StyleGAN Fig. 8
# shows -1 to 1); the styles are extrapolated beyond 1, and the images break up long before |psi| = 2.
TRUNC_RANGE = (-2.0, 2.0)
ROTATE_RANGE = (-360.0, 360.0)  # degrees: one turn either way names every rotation
# StyleGAN3 moves its image by shifting the phases of its Fourier input (float32): 100 image widths already shift the
# finest frequencies by ~10^4 radians, where float32 keeps ~2^-7 rad of the phase; further, the input loses detail.
TRANSLATE_RANGE = (-100.0, 100.0)
MAX_PROBLEMS_PER_FLAG = 10  # a value with thousands of bad parts is reported by its first few
MAX_SHOWN = 60  # characters of a typed value repeated in a message
COARSE_STYLES = range(7)  # StyleGAN Fig. 3 mixes the coarse styles 0-6 by default


@dataclasses.dataclass(frozen=True)
class GenerateOptions:
    """What `ganforge generate` makes. Exactly one output mode: PNGs per seed (default), `grid` (rows, columns),
    `interp` (frames per seed-to-seed transition of a looping animation) or `style_mix` (row seeds, column seeds)."""

    network: Path
    outdir: Path
    seeds: tuple[int, ...] = ()
    trunc: float = 1.0  # psi
    trunc_cutoff: int | None = None  # truncate only the first N ws; None: all
    class_index: int | None = None
    noise_mode: str = "const"  # const | random (drawn from each image's seed) | none
    batch: int = 16
    device: str = "auto"
    grid: tuple[int, int] | None = None
    interp: int | None = None
    interp_space: str = "z"  # z: spherical interpolation of z; w: linear interpolation of w
    interp_format: str = "auto"  # auto | mp4 | webp | gif
    style_mix: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    mix_layers: tuple[int, ...] | None = None  # None: the coarse styles 0-6 the network has
    translate: tuple[float, float] = (0.0, 0.0)  # StyleGAN3: image motion in image widths (x right, y down)
    rotate: float = 0.0  # StyleGAN3: degrees counter-clockwise about the image centre

    @property
    def moves(self) -> bool:
        """Does the image move through the StyleGAN3 input transform?"""
        return self.translate != (0.0, 0.0) or self.rotate != 0.0

    def __post_init__(self):
        assert self.noise_mode in NOISE_MODES and self.interp_space in INTERP_SPACES, self
        assert self.interp_format in ANIMATION_FORMATS, self.interp_format

    @property
    def mode(self) -> str:
        return "grid" if self.grid else "interp" if self.interp else "style_mix" if self.style_mix else "images"

    @classmethod
    def parse(
        cls, *, seeds=None, grid=None, style_mix=None, mix_layers=None, translate=None, rotate=None, **fields
    ) -> "GenerateOptions":
        """From the CLI's values (seeds, grid, style_mix, mix_layers and translate as typed); UserError listing every
        problem."""
        modes = [
            flag
            for flag, value in (("--grid", grid), ("--interp", fields.get("interp")), ("--style-mix", style_mix))
            if value
        ]
        problems = [f"{' and '.join(modes)}: choose one output mode"] if len(modes) > 1 else []
        if style_mix and seeds:
            problems.append("--seeds: --style-mix takes its own row and column seeds; drop --seeds")
        if not style_mix and not seeds:
            problems.append("--seeds: which images to make, e.g. --seeds 0-7,42 (or --style-mix ROWS COLS)")
        if mix_layers and not style_mix:
            problems.append("--mix-layers: only used with --style-mix")
        for flag, value, (low, high), meaning in (
            ("--trunc", fields.get("trunc", 1.0), TRUNC_RANGE, "truncation psi (1: none, 0: the average image)"),
            ("--rotate", rotate or 0.0, ROTATE_RANGE, "degrees"),
        ):
            if not (math.isfinite(value) and low <= value <= high):
                problems.append(f"{flag} {value:g}: {meaning} must be a number from {low:g} to {high:g}")
        for flag, name, low in (
            ("--batch", "batch", 1),
            ("--interp", "interp", 1),
            ("--trunc-cutoff", "trunc_cutoff", 1),
            ("--class", "class_index", 0),
        ):
            value = fields.get(name)
            if value is not None and not low <= value <= MAX_COUNT:
                problems.append(f"{flag} {_shown(str(value), 20)}: must be from {low} to {MAX_COUNT:,}")
        options = cls(
            **fields,
            seeds=parse_ranges("--seeds", seeds, problems) if seeds else (),
            grid=_parse_grid(grid, problems) if grid else None,
            style_mix=tuple(parse_ranges("--style-mix", s, problems) for s in style_mix) if style_mix else None,
            mix_layers=parse_ranges("--mix-layers", mix_layers, problems) if mix_layers else None,
            translate=_parse_translate(translate, problems) if translate else (0.0, 0.0),
            rotate=rotate or 0.0,
        )
        problems = problems or options._count_problems()  # counts mean something only when all else is right
        if problems:
            raise UserError(*problems)
        return options

    def _count_problems(self) -> list[str]:
        problems = []
        if self.grid and len(self.seeds) > self.grid[0] * self.grid[1]:
            rows, cols = self.grid
            problems.append(f"--grid {rows}x{cols}: holds {rows * cols} images, --seeds gives {len(self.seeds)}")
        if self.interp and len(self.seeds) < 2:
            problems.append("--interp: needs at least two --seeds to travel between")
        elif self.image_count > MAX_COUNT:
            problems.append(
                f"{self._count_flag()}: {self.image_count:,} images, more than {MAX_COUNT:,}; split the "
                "work into several runs"
            )
        return problems

    @property
    def image_count(self) -> int:
        """Images the synthesis network makes (grid cells left black and the table's corner are not made)."""
        if self.mode == "interp":
            return len(self.seeds) * self.interp
        if self.mode == "style_mix":
            rows, cols = self.style_mix
            return len(rows) + len(cols) + len(rows) * len(cols)
        return len(self.seeds)

    def _count_flag(self) -> str:
        if self.mode == "interp":
            return f"--interp {self.interp} with {len(self.seeds):,} seeds"
        if self.mode == "style_mix":
            return f"--style-mix {len(self.style_mix[0]):,} rows x {len(self.style_mix[1]):,} columns"
        return "--seeds"

    def check_network(self, G) -> None:
        """UserError listing every option the loaded generator cannot honour (class, cutoff, mixed layers)."""
        problems = []
        if G.c_dim == 0 and self.class_index is not None:
            problems.append(f"--class {self.class_index}: {self.network} is unconditional; drop --class")
        if G.c_dim > 0 and self.class_index is None:
            problems.append(f"--class: {self.network} is conditional; pick a class from 0 to {G.c_dim - 1}")
        if G.c_dim > 0 and self.class_index is not None and self.class_index >= G.c_dim:
            problems.append(f"--class {self.class_index}: {self.network} has classes 0 to {G.c_dim - 1}")
        if self.trunc_cutoff is not None and self.trunc_cutoff > G.num_ws:
            problems.append(
                f"--trunc-cutoff {self.trunc_cutoff}: {self.network} has {G.num_ws} ws; use 1 to {G.num_ws}"
            )
        if self.moves and not hasattr(G.synthesis, "input"):
            problems.append(
                f"--translate/--rotate: {self.network} is a StyleGAN2 generator; only StyleGAN3 moves its "
                "image through the input transform"
            )
        too_deep = [layer for layer in self.mix_layers or () if layer >= G.num_ws]
        if too_deep:
            problems.append(f"--mix-layers: {self.network} has layers 0 to {G.num_ws - 1}, not {too_deep}")
        if problems:
            raise UserError(*problems)

    def layers_to_mix(self, num_ws: int) -> tuple[int, ...]:
        return self.mix_layers or tuple(i for i in COARSE_STYLES if i < num_ws)


def parse_ranges(flag: str, text: str, problems: list) -> tuple[int, ...]:
    """ "0-7,12,100-199" -> (0, ..., 7, 12, 100, ..., 199) in the order given; each problem is appended (the first
    MAX_PROBLEMS_PER_FLAG of them, then their count). At most MAX_COUNT values, each from 0 to MAX_SEED."""
    values, found = [], []
    shown = _shown(text)
    for part in text.split(","):
        match = re.fullmatch(r"\s*([0-9]+)\s*(?:-\s*([0-9]+)\s*)?", part)
        if match is None:
            found.append(f"{flag} {shown}: {_shown(part.strip(), 20)!r} is not N or N-M (e.g. 0-7,12,100-199)")
            continue
        too_big = [d for d in (match[1], match[2]) if d and _above_max_seed(d)]
        if too_big:
            found.append(f"{flag} {shown}: {_shown(too_big[0], 20)} is above {MAX_SEED}")
            continue
        first, last = _int(match[1]), _int(match[2] or match[1])
        if last < first:
            found.append(f"{flag} {shown}: range {first}-{last} runs backwards; write {last}-{first}")
        elif len(values) + last - first + 1 > MAX_COUNT:
            found.append(f"{flag} {shown}: more than {MAX_COUNT:,} values; split the work into several runs")
            break
        else:
            values.extend(range(first, last + 1))
    found = list(dict.fromkeys(found))  # "x,x,x": one line
    problems += found[:MAX_PROBLEMS_PER_FLAG]
    if len(found) > MAX_PROBLEMS_PER_FLAG:
        problems.append(f"{flag}: {len(found) - MAX_PROBLEMS_PER_FLAG} more bad part(s)")
    return tuple(values)


def _above_max_seed(digits: str) -> bool:
    """Is the number above MAX_SEED? Decided by length first, so that a 5,000-digit typo is not converted (Python
    refuses to beyond 4,300 digits)."""
    return len(digits.lstrip("0")) > len(str(MAX_SEED)) or _int(digits) > MAX_SEED


def _int(digits: str) -> int:
    """A decimal number of at most a few significant digits, whatever its leading zeros."""
    return int(digits.lstrip("0") or "0")


def _shown(text: str, limit: int = MAX_SHOWN) -> str:
    """A typed value as a message repeats it: at most `limit` characters."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _parse_grid(text: str, problems: list) -> tuple[int, int] | None:
    match = re.fullmatch(r"\s*([0-9]+)\s*[xX]\s*([0-9]+)\s*", text)
    if match is None or "" in (match[1].strip("0"), match[2].strip("0")):
        problems.append(f"--grid {_shown(text)}: write ROWSxCOLUMNS with both at least 1, e.g. 4x8")
        return None
    if max(len(match[1].lstrip("0")), len(match[2].lstrip("0"))) > len(str(MAX_COUNT)):
        problems.append(f"--grid {_shown(text)}: more than {MAX_COUNT:,} images; split the work into several grids")
        return None
    return _int(match[1]), _int(match[2])


def _parse_translate(text: str, problems: list) -> tuple[float, float]:
    low, high = TRANSLATE_RANGE
    parts = text.split(",")
    try:
        x, y = (float(part) for part in parts)
        if all(math.isfinite(v) and low <= v <= high for v in (x, y)):
            return x, y
    except ValueError:
        pass  # reported below, with the other malformed forms
    problems.append(
        f"--translate {_shown(text)}: write X,Y in image widths, each from {low:g} to {high:g}, e.g. 0.25,-0.1"
    )
    return (0.0, 0.0)
