"""The options of `ganforge generate` as one frozen dataclass. `GenerateOptions.parse` turns the command line's strings
into it and lists every problem at once; `check_network` adds the problems that depend on the network. Imports
nothing heavy, so the CLI can take its choices from here."""

import dataclasses
import math
from pathlib import Path

from ganforge.errors import UserError, first_few
from ganforge.generate import labels
from ganforge.generate.typed import MAX_COUNT, echoed, parse_grid, parse_ranges, parse_translate

NOISE_MODES = ("const", "random", "none")
INTERP_SPACES = ("z", "w")
ANIMATION_FORMATS = ("auto", "mp4", "webp", "gif")
RESIZE_FILTERS = ("lanczos", "nearest")  # nearest keeps each generated pixel a sharp block
DEFAULT_RESIZE = "lanczos"
# Truncation psi: 1 is none, 0 the average image, negative values the other side of the average (StyleGAN Fig. 8
# shows -1 to 1); the styles are extrapolated beyond 1, and the images break up long before |psi| = 2.
TRUNC_RANGE = (-2.0, 2.0)
ROTATE_RANGE = (-360.0, 360.0)  # degrees: one turn either way names every rotation
COARSE_STYLES = range(7)  # StyleGAN Fig. 3 mixes the coarse styles 0-6 by default
MAX_SIZE = 8192  # --size: an 8K screen's width; a grid of such images is bounded by the memory estimate
DEFAULT_FPS = 30.0
# --fps: from a slide show (10 s a frame) to high-refresh screens
FPS_RANGE = (0.1, 120.0)
# GIF stores frame durations in hundredths of a second, and browsers play frames shorter than 20 ms at 100 ms
MAX_GIF_FPS = 50
# options whose CLI value is None when not given, so that one given where it has no use can be refused
DEFAULTED = ("resize", "fps", "trunc", "interp_space")


@dataclasses.dataclass(frozen=True)
class GenerateOptions:
    """What `ganforge generate` makes. Exactly one output mode: PNGs per seed (default), `grid` (rows, columns; as
    many cells as seeds), `interp` (frames per seed-to-seed transition of a looping animation; with `grid`, a grid of
    such loops, each cell through its own consecutive seeds) or `style_mix` (row seeds, column seeds).

    With `projected_w`, the rows of those files (projected_w.npz, see ganforge.projected) take the place of the seeds
    in the first three modes: each row is a W+ latent, rendered as it is; row k of all the files together is image
    k, named proj00.png ... in the images mode, and draws its `random` noise from seed k.

    A conditional network takes one of `class_index` (its one-hot vector), `label` or `label_file` (images mode
    only: every seed with every vector of the file, seedS-labelK.png for vector K)."""

    network: Path
    outdir: Path
    seeds: tuple[int, ...] = ()
    trunc: float = 1.0  # psi
    trunc_cutoff: int | None = None  # truncate only the first N ws; None: all
    class_index: int | None = None
    label: tuple[float, ...] | None = None  # one label vector of the network's c_dim numbers
    label_file: Path | None = None  # label vectors, one per line (see ganforge.generate.labels)
    noise_mode: str = "const"  # const | random (drawn from each image's seed) | none
    batch: int = 16
    device: str = "auto"
    grid: tuple[int, int] | None = None
    interp: int | None = None
    interp_space: str = "z"  # z: spherical interpolation of z; w: linear interpolation of w (always for projected_w)
    interp_format: str = "auto"  # auto | mp4 | webp | gif
    style_mix: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    mix_layers: tuple[int, ...] | None = None  # None: the coarse styles 0-6 the network has
    translate: tuple[float, float] = (0.0, 0.0)  # StyleGAN3: image motion in image widths (x right, y down)
    rotate: float = 0.0  # StyleGAN3: degrees counter-clockwise about the image centre
    # Pixels of the short side of every image in the files written, the aspect kept (a square network's images are
    # size x size); None: as the network makes them
    size: int | None = None
    resize: str = DEFAULT_RESIZE  # how images are brought to `size`: lanczos | nearest
    fps: float = DEFAULT_FPS  # frames per second of an interpolation
    mix_cells: bool = False  # with style_mix, also one PNG per mixed cell of the table
    projected_w: tuple[Path, ...] = ()  # projected_w.npz files whose rows, in order, take the place of seeds
    # Rows of the projected_w files together: generate sets it once it has read them (0 until then), so that the
    # counts below hold for both kinds of latents.
    projected_rows: int = 0
    label_rows: int = 0  # vectors in label_file: generate sets it once it has read the file (0 until then)

    @property
    def moves(self) -> bool:
        """Does the image move through the StyleGAN3 input transform?"""
        return self.translate != (0.0, 0.0) or self.rotate != 0.0

    def __post_init__(self):
        assert self.noise_mode in NOISE_MODES and self.interp_space in INTERP_SPACES, self
        assert self.interp_format in ANIMATION_FORMATS and self.resize in RESIZE_FILTERS, self

    @property
    def keys(self) -> int:
        """Latents the images come from: the seeds, or the rows of the projected_w files."""
        return self.projected_rows if self.projected_w else len(self.seeds)

    @property
    def mode(self) -> str:
        return "interp" if self.interp else "grid" if self.grid else "style_mix" if self.style_mix else "images"

    @property
    def layout(self) -> tuple[int, int]:
        """(rows, columns) of images in each file: the grid's, else (1, 1)."""
        return self.grid or (1, 1)

    @classmethod
    def parse(
        cls,
        *,
        seeds=None,
        grid=None,
        style_mix=None,
        mix_layers=None,
        translate=None,
        rotate=None,
        projected_w=(),
        label=None,
        **fields,
    ) -> "GenerateOptions":
        """From the CLI's values (seeds, grid, style_mix, mix_layers, translate and label as typed; None for a flag
        not given; projected_w the files given, in order); UserError listing every problem."""
        fields = {name: value for name, value in fields.items() if value is not None or name not in DEFAULTED}
        given = dict(grid=grid, style_mix=style_mix, mix_layers=mix_layers, projected_w=projected_w, label=label)
        problems = _combination_problems(seeds, given, fields) + _number_problems(fields, rotate)
        options = cls(
            **fields,
            seeds=parse_ranges("--seeds", seeds, problems) if seeds else (),
            grid=parse_grid(grid, problems) if grid else None,
            style_mix=tuple(parse_ranges("--style-mix", s, problems) for s in style_mix) if style_mix else None,
            mix_layers=parse_ranges("--mix-layers", mix_layers, problems) if mix_layers else None,
            translate=parse_translate(translate, problems) if translate else (0.0, 0.0),
            rotate=rotate or 0.0,
            projected_w=tuple(projected_w),
            label=labels.parse_label(label, problems) if label is not None else None,
        )
        problems = problems or options.count_problems()  # counts mean something only when all else is right
        if problems:
            raise UserError(*problems)
        return options

    def count_problems(self) -> list[str]:
        """What the numbers of seeds (or projected rows), cells and images do not allow (also checked for options
        made without `parse`). Projected rows are counted once generate has read them."""
        if (self.projected_w and not self.projected_rows) or (self.label_file and not self.label_rows):
            return []
        if self.grid:
            problems = self._grid_problems()
        elif self.interp and self.keys < 2:
            problems = [
                f"--interp: needs at least two rows of --projected-w to travel between, the files hold {self.keys}; "
                "give another file too"
                if self.projected_w
                else "--interp: needs at least two --seeds to travel between"
            ]
        else:
            problems = []
        if not problems and self.image_count > MAX_COUNT:
            problems.append(
                f"{self._count_flag()}: {self.image_count:,} images, more than {MAX_COUNT:,}; split the "
                "work into several runs"
            )
        return problems

    def _grid_problems(self) -> list[str]:
        """A grid has one image per cell; a grid of interpolations (as NVlabs' gen_video.py) gives each cell the same
        number of consecutive seeds (or projected rows), at least two to travel between. Cells are never left
        black. The files' rows are what they are: only the grid can change to fit them."""
        rows, cols = self.grid
        cells, keys = rows * cols, self.keys
        given = f"--projected-w holds {keys:,} rows" if self.projected_w else f"--seeds gives {keys:,} images"
        if not self.interp and keys != cells:
            fitting = f" (e.g. --grid {grid_for(keys)})" if keys else ""
            more = "" if self.projected_w else f"give {cells:,} seeds, or "
            return [f"--grid {rows}x{cols}: {cells:,} cells, {given}; {more}a grid of {keys:,} cells{fitting}"]
        if self.interp and self.projected_w and (keys % cells or keys < 2 * cells):
            return [
                f"--grid {rows}x{cols} with --interp: each of the {cells:,} cells loops through its own rows (the "
                f"same number in each, at least 2); {given}; give a multiple of {cells:,} rows from {2 * cells:,}"
            ]
        if self.interp and (keys % cells or keys < 2 * cells):
            return [
                f"--grid {rows}x{cols} with --interp: each of the {cells:,} cells loops through its own seeds (the "
                f"same number in each, at least 2); --seeds gives {keys:,}; give a multiple of {cells:,} from "
                f"{2 * cells:,}, e.g. --seeds 0-{2 * cells - 1}"
            ]
        return []

    @property
    def image_count(self) -> int:
        """Images the synthesis network makes (the style-mixing table's blank corner is not made)."""
        if self.mode == "interp":
            return self.keys * self.interp
        if self.mode == "style_mix":
            rows, cols = self.style_mix
            return len(rows) + len(cols) + len(rows) * len(cols)
        return self.keys * (self.label_rows if self.label_file else 1)  # every seed with every vector of the file

    @property
    def frames(self) -> int:
        """Frames of an interpolation: --interp frames per seed (or row) of one cell."""
        rows, cols = self.layout
        return self.keys // (rows * cols) * self.interp

    @property
    def frames_per_batch(self) -> int:
        """Frames of an interpolation made together: as many whole frames (every cell of each) as --batch images
        hold, at least one."""
        rows, cols = self.layout
        return min(max(1, self.batch // (rows * cols)), self.frames)

    def _count_flag(self) -> str:
        keys = "rows of --projected-w" if self.projected_w else "seeds"
        if self.mode == "interp":
            return f"--interp {self.interp} with {self.keys:,} {keys}"
        if self.mode == "style_mix":
            return f"--style-mix {len(self.style_mix[0]):,} rows x {len(self.style_mix[1]):,} columns"
        if self.label_file:
            return f"--seeds with --label-file ({self.label_rows:,} vectors)"
        return "--projected-w" if self.projected_w else "--seeds"

    def _w_space_problems(self, G) -> list[str]:
        """What needs a mapping network's W space (truncation towards the average w, styles per layer) that an R3GAN
        generator, which maps z straight to the image, does not have."""
        if G.has_w_space:
            return []
        no_w = f"{self.network} is an R3GAN generator, which has no mapping network and so no W space"
        problems = []
        if self.trunc != 1:
            problems.append(f"--trunc {self.trunc:g}: {no_w} and no average w to truncate towards; leave --trunc out")
        if self.mode == "style_mix":
            problems.append(f"--style-mix: {no_w} and no per-layer styles to mix; use --seeds or --interp")
        return problems

    def check_network(self, G) -> None:
        """UserError listing every option the loaded generator cannot honour (class or label, cutoff, mixed layers).
        Projected ws already hold their class. The lines of a label file are checked as generate reads it."""
        label = (self.class_index, self.label, self.label_file)
        problems = [] if self.projected_w else labels.network_problems(*label, G.c_dim, self.network)
        if self.trunc_cutoff is not None and self.trunc_cutoff > G.num_ws:
            problems.append(
                f"--trunc-cutoff {self.trunc_cutoff}: {self.network} has {G.num_ws} ws; use 1 to {G.num_ws}"
            )
        problems += self._w_space_problems(G)
        if self.moves and not hasattr(G.synthesis, "input"):
            problems.append(
                f"--translate/--rotate: {self.network} is a StyleGAN2 generator; only StyleGAN3 moves its "
                "image through the input transform"
            )
        too_deep = [layer for layer in self.mix_layers or () if layer >= G.num_ws]
        if too_deep:
            problems.append(f"--mix-layers: {self.network} has layers 0 to {G.num_ws - 1}, not {first_few(too_deep)}")
        if problems:
            raise UserError(*problems)

    def layers_to_mix(self, num_ws: int) -> tuple[int, ...]:
        return self.mix_layers or tuple(i for i in COARSE_STYLES if i < num_ws)


def _combination_problems(seeds, given: dict, fields: dict) -> list[str]:
    """Flags given together that do not go together, or given without the flag they serve."""
    interp, style_mix = fields.get("interp"), given["style_mix"]
    modes = [
        flag for flag, value in (("--grid", given["grid"]), ("--interp", interp), ("--style-mix", style_mix)) if value
    ]
    problems = labels.flag_problems(fields.get("class_index"), given["label"], fields.get("label_file"), modes)
    if style_mix and len(modes) > 1:
        problems.append(f"{' and '.join(modes)}: choose one output mode (--grid with --interp is a grid of loops)")
    if given["projected_w"]:
        problems += _projected_problems(seeds, given, fields)
    elif style_mix and seeds:
        problems.append("--seeds: --style-mix takes its own row and column seeds; drop --seeds")
    elif not style_mix and not seeds:
        problems.append(
            "--seeds: which images to make, e.g. --seeds 0-7,42 (or --style-mix ROWS COLS, or --projected-w FILE)"
        )
    for flag, name, needs, present in (
        ("--mix-layers", "mix_layers", "--style-mix", style_mix),
        ("--mix-cells", "mix_cells", "--style-mix", style_mix),
        ("--fps", "fps", "--interp", interp),
        ("--resize", "resize", "--size", fields.get("size")),
    ):
        if (given.get(name) or fields.get(name)) and not present:
            problems.append(f"{flag}: only used with {needs}")
    return problems


def _projected_problems(seeds, given: dict, fields: dict) -> list[str]:
    """The rows of --projected-w are ws rendered as they are: the flags that make or change ws from seeds have
    nothing to act on."""
    makers = (
        ("--seeds", seeds),
        ("--style-mix", given["style_mix"]),
        ("--trunc", fields.get("trunc")),
        ("--trunc-cutoff", fields.get("trunc_cutoff")),
        ("--class", fields.get("class_index")),
        ("--label", given["label"]),
        ("--label-file", fields.get("label_file")),
    )
    flags = [flag for flag, value in makers if value is not None]
    problems = []
    if flags:
        problems.append(
            f"--projected-w with {', '.join(flags)}: its rows are ws, rendered as they are (their class or label is "
            f"in them; seeds, truncation and style mixing make ws of their own); drop {', '.join(flags)}"
        )
    if fields.get("interp_space") == "z":
        problems.append("--interp-space z: the rows of --projected-w are ws, interpolated linearly in w; drop it")
    return problems


def _number_problems(fields: dict, rotate) -> list[str]:
    """Each number out of its range (NaN and infinities included), as typed."""
    problems = []
    for flag, value, (low, high), meaning in (
        ("--trunc", fields.get("trunc", 1.0), TRUNC_RANGE, "truncation psi (1: none, 0: the average image)"),
        ("--rotate", rotate or 0.0, ROTATE_RANGE, "degrees"),
        ("--fps", fields.get("fps", DEFAULT_FPS), FPS_RANGE, "frames per second"),
    ):
        if not (math.isfinite(value) and low <= value <= high):
            problems.append(f"{flag} {value:g}: {meaning} must be a number from {low:g} to {high:g}")
    for flag, name, low, high in (
        ("--batch", "batch", 1, MAX_COUNT),
        ("--interp", "interp", 1, MAX_COUNT),
        ("--trunc-cutoff", "trunc_cutoff", 1, MAX_COUNT),
        ("--class", "class_index", 0, MAX_COUNT),
        ("--size", "size", 1, MAX_SIZE),
    ):
        value = fields.get(name)
        if value is not None and not low <= value <= high:
            problems.append(f"{flag} {echoed(str(value), 20)}: must be from {low} to {high:,}")
    return problems


def grid_for(count: int) -> str:
    """The most nearly square RxC grid of exactly `count` cells (R <= C), as --grid takes it."""
    rows = max(r for r in range(1, math.isqrt(count) + 1) if count % r == 0)
    return f"{rows}x{count // rows}"
