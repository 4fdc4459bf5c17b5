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
    def parse(cls, *, seeds=None, grid=None, style_mix=None, mix_layers=None, translate=None, rotate=None,
              **fields) -> "GenerateOptions":  # fmt: skip
        """From the CLI's values (seeds, grid, style_mix, mix_layers and translate as typed); UserError listing every
        problem."""
        modes = [flag for flag, value in (("--grid", grid), ("--interp", fields.get("interp")),
                                          ("--style-mix", style_mix)) if value]  # fmt: skip
        problems = [f"{' and '.join(modes)}: choose one output mode"] if len(modes) > 1 else []
        if style_mix and seeds:
            problems.append("--seeds: --style-mix takes its own row and column seeds; drop --seeds")
        if not style_mix and not seeds:
            problems.append("--seeds: which images to make, e.g. --seeds 0-7,42 (or --style-mix ROWS COLS)")
        if mix_layers and not style_mix:
            problems.append("--mix-layers: only used with --style-mix")
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
        return problems

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
            problems.append(f"--translate/--rotate: {self.network} is a StyleGAN2 generator; only StyleGAN3 moves its "
                            "image through the input transform")  # fmt: skip
        too_deep = [layer for layer in self.mix_layers or () if layer >= G.num_ws]
        if too_deep:
            problems.append(f"--mix-layers: {self.network} has layers 0 to {G.num_ws - 1}, not {too_deep}")
        if problems:
            raise UserError(*problems)

    def layers_to_mix(self, num_ws: int) -> tuple[int, ...]:
        return self.mix_layers or tuple(i for i in COARSE_STYLES if i < num_ws)


def parse_ranges(flag: str, text: str, problems: list) -> tuple[int, ...]:
    """ "0-7,12,100-199" -> (0, ..., 7, 12, 100, ..., 199) in the order given; each problem is appended."""
    values = []
    for part in text.split(","):
        match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if match is None:
            problems.append(f"{flag} {text}: {part.strip()!r} is not N or N-M (e.g. 0-7,12,100-199)")
            continue
        first, last = int(match[1]), int(match[2] or match[1])
        if last < first:
            problems.append(f"{flag} {text}: range {first}-{last} runs backwards; write {last}-{first}")
        elif last > MAX_SEED:
            problems.append(f"{flag} {text}: {last} is above {MAX_SEED}")
        elif len(values) + last - first + 1 > MAX_COUNT:
            problems.append(f"{flag} {text}: more than {MAX_COUNT:,} values; split the work into several runs")
            break
        else:
            values.extend(range(first, last + 1))
    return tuple(values)


def _parse_grid(text: str, problems: list) -> tuple[int, int] | None:
    match = re.fullmatch(r"\s*(\d+)\s*[xX]\s*(\d+)\s*", text)
    if match is None or min(int(match[1]), int(match[2])) < 1:
        problems.append(f"--grid {text}: write ROWSxCOLUMNS with both at least 1, e.g. 4x8")
        return None
    return int(match[1]), int(match[2])


def _parse_translate(text: str, problems: list) -> tuple[float, float]:
    parts = text.split(",")
    try:
        x, y = (float(part) for part in parts)
        if all(math.isfinite(v) for v in (x, y)):
            return x, y
    except ValueError:
        pass  # reported below, with the other malformed forms
    problems.append(f"--translate {text}: write X,Y in image widths, e.g. 0.25,-0.1")
    return (0.0, 0.0)
