"""The options of `ganforge generate` as one frozen dataclass, each declared on the field it sets (`ganforge.option`):
the command's click options, their checks and the command line that gives a set of options (`ganforge explore`'s) are
derived from the declarations. `GenerateOptions.parse` turns the command line's words into it and lists every problem
at once; `check_network` adds the problems that depend on the network. Imports nothing heavy, so the CLI can take its
declarations from here."""

import dataclasses
from pathlib import Path

from ganforge.devices import DEVICE_CHOICES
from ganforge.errors import UserError
from ganforge.generate import labels, problems
from ganforge.generate.typed import (
    MAX_COUNT,
    MAX_SEED,
    grid_text,
    numbers_text,
    parse_grid,
    parse_ranges,
    parse_translate,
    ranges_text,
)
from ganforge.option import Range, declared, given, option, value_problems

NOISE_MODES = ("const", "random", "none")
INTERP_SPACES = ("z", "w")
ANIMATION_FORMATS = ("auto", "mp4", "webp", "gif")
RESIZE_FILTERS = ("lanczos", "nearest")  # nearest keeps each generated pixel a sharp block
COARSE_STYLES = range(7)  # StyleGAN Fig. 3 mixes the coarse styles 0-6 by default
MAX_SIZE = 8192  # --size: an 8K screen's width; a grid of such images is bounded by the memory estimate
# GIF stores frame durations in hundredths of a second, and browsers play frames shorter than 20 ms at 100 ms
MAX_GIF_FPS = 50
COUNTS = Range(1, MAX_COUNT, whole=True)
FPS = Range(0.1, 120)  # from a slide show (10 s a frame) to high-refresh screens
FPS_SPAN = f"from {FPS.low:g} to {FPS.high:g}"
# Truncation psi: 1 is none, 0 the average image, negative values the other side of the average (StyleGAN Fig. 8
# shows -1 to 1); the styles are extrapolated beyond 1, and the images break up long before |psi| = 2.
PSI = Range(-2, 2)
TURN = Range(-360, 360)  # degrees: one turn either way names every rotation
# How far --edit-amount moves a w: a w of a trained StyleGAN2 is a few tens long (512 dims of unit scale), and an
# image has long turned into another one before a move of 100.
EDIT_AMOUNT = Range(-100, 100)

# The sections of `ganforge generate --help`
OUTPUT, MAKE, LATENTS, SIZE = "Network and output", "What to make", "Latents", "Image size"


@dataclasses.dataclass(frozen=True, kw_only=True)
class GenerateOptions:
    """What `ganforge generate` makes. Exactly one output mode: PNGs per seed (default), `grid` (rows, columns; as
    many cells as seeds), `interp` (frames per seed-to-seed transition of a looping animation; with `grid`, a grid of
    such loops, each cell through its own consecutive seeds) or `style_mix` (row seeds, column seeds).

    With `projected_w`, the rows of those files (projected_w.npz, see ganforge.projected) take the place of the seeds
    in the first three modes: each row is a W+ latent, rendered as it is; row k of all the files together is image
    k, named proj00.png ... in the images mode, and draws its `random` noise from seed k.

    A conditional network takes one of `class_index` (its one-hot vector), `label` or `label_file` (images mode
    only: every seed with every vector of the file, seedS-labelK.png for vector K).

    The fields are declared in the order a command line writes them (`ganforge.option.command_words`)."""

    network: Path = option(
        OUTPUT,
        "Generator: a ganforge snapshot (.safetensors), an NVlabs pickle (.pkl) or a rosinality checkpoint (.pt); "
        "foreign files are converted in memory, never executed.",
        required=True,
    )
    outdir: Path = option(OUTPUT, "Output folder.", required=True, metavar="DIRECTORY")
    device: str = option(OUTPUT, "Where to generate.", default="auto", choices=DEVICE_CHOICES)
    batch: int = option(
        OUTPUT,
        "Images per forward pass. 1 makes each image alone (as NVlabs' generate.py): its file is then the same "
        "whatever the other seeds; bigger batches are faster and round differently (a pixel may move by one level).",
        default=16,
        range=COUNTS,
    )
    seeds: tuple[int, ...] = option(
        MAKE,
        "Images to make, by seed: ranges and lists, e.g. 0-7,12,100-199.",
        default=(),
        kind=str,
        text=ranges_text,
    )
    projected_w: tuple[Path, ...] = option(
        MAKE,
        "Images from projected latents instead of seeds: a projected_w.npz as `ganforge project` or NVlabs' "
        "projector writes it, one image per row (proj00.png, proj01.png, ...). Repeat the flag to take the rows of "
        "several files in order, e.g. to --interp between two projected photos.",
        default=(),
        multiple=True,
        metavar="FILE",
    )
    grid: tuple[int, int] | None = option(
        MAKE,
        "One grid.png, R rows by C columns, one seed per cell, instead of a PNG per seed; with --interp, a grid of "
        "loops, each cell through its own consecutive seeds (R x C x K seeds, K >= 2 per cell).",
        default=None,
        kind=str,
        metavar="RxC",
        text=grid_text,
    )
    interp: int | None = option(
        MAKE,
        "Looping interpolation through the seeds, FRAMES per seed (interp.mp4, .webp or .gif).",
        default=None,
        range=COUNTS,
        metavar="FRAMES",
    )
    fps: float = option(
        MAKE,
        f"Frames per second of --interp, {FPS_SPAN} (GIF: up to {MAX_GIF_FPS}).",
        default=30.0,
        range=FPS,
        must=f"a number of frames per second {FPS_SPAN}",
    )
    interp_space: str = option(
        MAKE,
        "z: spherical in z; w: linear in w (--projected-w: always w).",
        default="z",
        choices=INTERP_SPACES,
    )
    interp_format: str = option(
        MAKE,
        "auto: mp4 when the video extra (imageio-ffmpeg) is installed, else webp.",
        default="auto",
        choices=ANIMATION_FORMATS,
    )
    style_mix: tuple[tuple[int, ...], tuple[int, ...]] | None = option(
        MAKE,
        "stylemix.png: each row seed's image with the --mix-layers ws of each column seed.",
        default=None,
        kind=str,
        nargs=2,
        metavar="ROWSEEDS COLSEEDS",
        text=ranges_text,
    )
    mix_cells: bool = option(
        MAKE,
        "Also write each mixed cell of --style-mix as its own PNG, mixROW-COL.png (seeds, 7 digits each).",
        default=False,
    )
    mix_layers: tuple[int, ...] | None = option(
        MAKE,
        "ws taken from the column seeds, e.g. 0-3.",
        default=None,
        kind=str,
        metavar="LAYERS",
        shown_default="0-6",
        text=ranges_text,
    )
    trunc: float = option(
        LATENTS,
        "Truncation psi: 1 is none; 0.5-0.7 trade variety for quality.",
        default=1.0,
        range=PSI,
        must=f"a truncation psi from {PSI.low:g} to {PSI.high:g} (1: none, 0: the average image)",
    )
    trunc_cutoff: int | None = option(
        LATENTS,
        "Truncate only the first N ws.",
        default=None,
        range=COUNTS,
        shown_default="all",
    )
    class_index: int | None = option(
        LATENTS,
        "Class of a conditional network (its one-hot label vector). One of --class, --label and --label-file.",
        default=None,
        flag="--class",
        range=Range(0, MAX_COUNT, whole=True),
    )
    label: tuple[float, ...] | None = option(
        LATENTS,
        "Label vector of a conditional network for every image: as many comma-separated finite numbers as the "
        "network has label inputs (c_dim), multi-hot or continuous, e.g. 0.2,1,0.",
        default=None,
        kind=str,
        metavar="V,V,...",
        text=numbers_text,
    )
    label_file: Path | None = option(
        LATENTS,
        "Label vectors, one per line (c_dim comma-separated numbers; an optional first line of column names): every "
        "seed is made with every vector, seedS-labelK.png for vector K (from 0); PNGs only.",
        default=None,
        metavar="CSV",
    )
    edit_dim: int | None = option(
        LATENTS,
        "Move every image's w along this dimension of W (from 0) by --edit-amount. One of --edit-dim, --edit-seed "
        "and --edit-file.",
        default=None,
        range=Range(0, MAX_COUNT, whole=True),
        metavar="D",
    )
    edit_seed: int | None = option(
        LATENTS,
        "Move every image's w along a random unit direction of W, drawn from this seed, by --edit-amount.",
        default=None,
        range=Range(0, MAX_SEED, whole=True),
        metavar="SEED",
    )
    edit_file: Path | None = option(
        LATENTS,
        "Move every image's ws along the ws of a one-row projected_w.npz, times --edit-amount (the file as it is, "
        "not made unit: the difference of two projected latents moves from one to the other at 1).",
        default=None,
        metavar="FILE",
    )
    edit_amount: float | None = option(
        LATENTS,
        "How far --edit-dim, --edit-seed or --edit-file moves each w (images and grids).",
        default=None,
        range=EDIT_AMOUNT,
        must=f"a distance in W from {EDIT_AMOUNT.low:g} to {EDIT_AMOUNT.high:g}",
        metavar="A",
    )
    edit_layers: tuple[int, ...] | None = option(
        LATENTS,
        "The ws the edit moves, e.g. 0-5.",
        default=None,
        kind=str,
        metavar="LAYERS",
        shown_default="all",
        text=ranges_text,
    )
    noise_mode: str = option(
        LATENTS,
        "const: the network's fixed noise; random: drawn from each image's seed (row k of --projected-w: seed k); "
        "none.",
        default="const",
        choices=NOISE_MODES,
    )
    translate: tuple[float, float] = option(
        LATENTS,
        "StyleGAN3: move the images by X,Y image widths (x right, y down) through the input transform.",
        default=(0.0, 0.0),
        kind=str,
        metavar="X,Y",
        shown_default="0,0",
        text=numbers_text,
    )
    rotate: float = option(
        LATENTS,
        "StyleGAN3: rotate the images counter-clockwise by DEG.",
        default=0.0,
        range=TURN,
        must=f"a number of degrees from {TURN.low:g} to {TURN.high:g}",
        metavar="DEG",
    )
    size: int | None = option(
        SIZE,
        "Every image PX x PX in the files (each cell of a grid, table or video), resampled by --resize; of a "
        "non-square network, PX is the short side and the long side keeps the aspect.",
        default=None,
        range=Range(1, MAX_SIZE, whole=True),
        metavar="PX",
        shown_default="the network's resolution",
    )
    resize: str = option(
        SIZE,
        "How images reach --size: lanczos (smooth), or nearest (each generated pixel a sharp block).",
        default="lanczos",
        choices=RESIZE_FILTERS,
    )
    # Rows of the projected_w files together: generate sets it once it has read them (0 until then), so that the
    # counts below hold for both kinds of latents.
    projected_rows: int = 0
    label_rows: int = 0  # vectors in label_file: generate sets it once it has read the file (0 until then)

    @property
    def moves(self) -> bool:
        """Does the image move through the StyleGAN3 input transform?"""
        return self.translate != (0.0, 0.0) or self.rotate != 0.0

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
        edit_layers=None,
        translate=None,
        label=None,
        **fields,
    ):
        """From the CLI's values (seeds, grid, style_mix, mix_layers, translate and label as typed; None for a flag
        not given; projected_w the files given, in order); UserError listing every problem."""
        fields = given(fields)
        typed = dict(grid=grid, style_mix=style_mix, mix_layers=mix_layers, edit_layers=edit_layers, label=label)
        found = problems.combination_problems(seeds, typed, fields)
        parsed = []  # the typed values' problems, in the order of the flags
        options = cls(
            **fields | {"projected_w": tuple(fields.get("projected_w", ()))},
            seeds=parse_ranges("--seeds", seeds, parsed) if seeds else (),
            grid=parse_grid(grid, parsed) if grid else None,
            style_mix=tuple(parse_ranges("--style-mix", s, parsed) for s in style_mix) if style_mix else None,
            mix_layers=parse_ranges("--mix-layers", mix_layers, parsed) if mix_layers else None,
            edit_layers=parse_ranges("--edit-layers", edit_layers, parsed) if edit_layers else None,
            translate=parse_translate(translate, parsed) if translate else (0.0, 0.0),
            label=labels.parse_label(label, parsed) if label is not None else None,
        )
        found += options.value_problems() + parsed
        found = found or options.count_problems()  # counts mean something only when all else is right
        if found:
            raise UserError(*found)
        return options

    def value_problems(self) -> list[str]:
        """Each value its declaration does not accept (also checked for options made without `parse`)."""
        return value_problems(GENERATE_OPTIONS, self)

    def count_problems(self) -> list[str]:
        """What the numbers of seeds (or projected rows), cells and images do not allow (also checked for options
        made without `parse`). Projected rows are counted once generate has read them."""
        return problems.count_problems(self)

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

    def check_network(self, G) -> None:
        """UserError listing every option the loaded generator cannot honour (class or label, cutoff, mixed layers).
        Projected ws already hold their class. The lines of a label file are checked as generate reads it."""
        found = problems.network_problems(self, G)
        if found:
            raise UserError(*found)

    def layers_to_mix(self, num_ws: int) -> tuple[int, ...]:
        return self.mix_layers or tuple(i for i in COARSE_STYLES if i < num_ws)


# Every option of `ganforge generate`, in the order of its fields.
GENERATE_OPTIONS = declared(GenerateOptions)
