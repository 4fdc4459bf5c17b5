"""What `ganforge generate`'s options do not allow together: flags that do not go together or serve a flag not given
(from the command line's words), counts of seeds, cells and images, and what the loaded network cannot honour. Each
problem is one message naming the flags; the options' values are checked against their declarations first."""

import math

from ganforge.errors import first_few
from ganforge.generate import labels
from ganforge.generate.typed import MAX_COUNT

DIRECTION_FLAGS = (("--edit-dim", "edit_dim"), ("--edit-seed", "edit_seed"), ("--edit-file", "edit_file"))


def combination_problems(seeds, typed: dict, fields: dict) -> list[str]:
    """Flags given together that do not go together, or given without the flag they serve. `typed`: the words of
    grid, style_mix, mix_layers and label as given (None: not given); `fields`: the other values given."""
    interp, style_mix = fields.get("interp"), typed["style_mix"]
    modes = [
        flag for flag, value in (("--grid", typed["grid"]), ("--interp", interp), ("--style-mix", style_mix)) if value
    ]
    problems = labels.flag_problems(fields.get("class_index"), typed["label"], fields.get("label_file"), modes)
    problems += edit_flag_problems(fields, typed, modes)
    if style_mix and len(modes) > 1:
        problems.append(f"{' and '.join(modes)}: choose one output mode (--grid with --interp is a grid of loops)")
    if fields.get("projected_w"):
        problems += _projected_problems(seeds, typed, fields)
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
        if (typed.get(name) or fields.get(name)) and not present:
            problems.append(f"{flag}: only used with {needs}")
    return problems


def _projected_problems(seeds, typed: dict, fields: dict) -> list[str]:
    """The rows of --projected-w are ws rendered as they are: the flags that make or change ws from seeds have
    nothing to act on."""
    makers = (
        ("--seeds", seeds),
        ("--style-mix", typed["style_mix"]),
        ("--trunc", fields.get("trunc")),
        ("--trunc-cutoff", fields.get("trunc_cutoff")),
        ("--class", fields.get("class_index")),
        ("--label", typed["label"]),
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


def count_problems(o) -> list[str]:
    """What the numbers of seeds (or projected rows), cells and images of the GenerateOptions `o` do not allow.
    Projected rows and label vectors are counted once generate has read their files."""
    if (o.projected_w and not o.projected_rows) or (o.label_file and not o.label_rows):
        return []
    if o.grid:
        problems = _grid_problems(o)
    elif o.interp and o.keys < 2:
        problems = [
            f"--interp: needs at least two rows of --projected-w to travel between, the files hold {o.keys}; "
            "give another file too"
            if o.projected_w
            else "--interp: needs at least two --seeds to travel between"
        ]
    else:
        problems = []
    if not problems and o.image_count > MAX_COUNT:
        problems.append(
            f"{_count_flag(o)}: {o.image_count:,} images, more than {MAX_COUNT:,}; split the work into several runs"
        )
    return problems


def _grid_problems(o) -> list[str]:
    """A grid has one image per cell; a grid of interpolations (as NVlabs' gen_video.py) gives each cell the same
    number of consecutive seeds (or projected rows), at least two to travel between. Cells are never left black. The
    files' rows are what they are: only the grid can change to fit them."""
    rows, cols = o.grid
    cells, keys = rows * cols, o.keys
    given = f"--projected-w holds {keys:,} rows" if o.projected_w else f"--seeds gives {keys:,} images"
    if not o.interp and keys != cells:
        fitting = f" (e.g. --grid {grid_for(keys)})" if keys else ""
        more = "" if o.projected_w else f"give {cells:,} seeds, or "
        return [f"--grid {rows}x{cols}: {cells:,} cells, {given}; {more}a grid of {keys:,} cells{fitting}"]
    if o.interp and o.projected_w and (keys % cells or keys < 2 * cells):
        return [
            f"--grid {rows}x{cols} with --interp: each of the {cells:,} cells loops through its own rows (the same "
            f"number in each, at least 2); {given}; give a multiple of {cells:,} rows from {2 * cells:,}"
        ]
    if o.interp and (keys % cells or keys < 2 * cells):
        return [
            f"--grid {rows}x{cols} with --interp: each of the {cells:,} cells loops through its own seeds (the same "
            f"number in each, at least 2); --seeds gives {keys:,}; give a multiple of {cells:,} from {2 * cells:,}, "
            f"e.g. --seeds 0-{2 * cells - 1}"
        ]
    return []


def _count_flag(o) -> str:
    keys = "rows of --projected-w" if o.projected_w else "seeds"
    if o.mode == "interp":
        return f"--interp {o.interp} with {o.keys:,} {keys}"
    if o.mode == "style_mix":
        return f"--style-mix {len(o.style_mix[0]):,} rows x {len(o.style_mix[1]):,} columns"
    if o.label_file:
        return f"--seeds with --label-file ({o.label_rows:,} vectors)"
    return "--projected-w" if o.projected_w else "--seeds"


def network_problems(o, G) -> list[str]:
    """Every option of `o` the loaded generator `G` cannot honour (class or label, cutoff, mixed layers, W space,
    motion). Projected ws already hold their class."""
    label = (o.class_index, o.label, o.label_file)
    space = getattr(G, "label_space", None)  # what a ganforge run recorded of its labels
    problems = [] if o.projected_w else labels.network_problems(*label, G.c_dim, o.network, space)
    if o.trunc_cutoff is not None and o.trunc_cutoff > G.num_ws:
        problems.append(f"--trunc-cutoff {o.trunc_cutoff}: {o.network} has {G.num_ws} ws; use 1 to {G.num_ws}")
    problems += _w_space_problems(o, G) + edit_network_problems(o, G)
    if o.moves and not hasattr(G.synthesis, "input"):
        problems.append(
            f"--translate/--rotate: {o.network} is a StyleGAN2 generator; only StyleGAN3 moves its image through the "
            "input transform"
        )
    too_deep = [layer for layer in o.mix_layers or () if layer >= G.num_ws]
    if too_deep:
        problems.append(f"--mix-layers: {o.network} has layers 0 to {G.num_ws - 1}, not {first_few(too_deep)}")
    return problems


def _w_space_problems(o, G) -> list[str]:
    """What needs a mapping network's W space (truncation towards the average w, styles per layer) that an R3GAN
    generator, which maps z straight to the image, does not have."""
    if G.has_w_space:
        return []
    no_w = f"{o.network} is an R3GAN generator, which has no mapping network and so no W space"
    problems = []
    if o.trunc != 1:
        problems.append(f"--trunc {o.trunc:g}: {no_w} and no average w to truncate towards; leave --trunc out")
    if o.mode == "style_mix":
        problems.append(f"--style-mix: {no_w} and no per-layer styles to mix; use --seeds or --interp")
    return problems


def grid_for(count: int) -> str:
    """The most nearly square RxC grid of exactly `count` cells (R <= C), as --grid takes it."""
    rows = max(r for r in range(1, math.isqrt(count) + 1) if count % r == 0)
    return f"{rows}x{count // rows}"


def edit_flag_problems(fields: dict, typed: dict, modes: list[str]) -> list[str]:
    """Flags of an edit that do not go together: one direction, with an amount, for single images or a grid."""
    directions = [flag for flag, name in DIRECTION_FLAGS if fields.get(name) is not None]
    amount = fields.get("edit_amount") is not None
    if not directions:
        given = [flag for flag, value in (("--edit-amount", amount), ("--edit-layers", typed["edit_layers"])) if value]
        return [f"{' and '.join(given)}: only used with --edit-dim, --edit-seed or --edit-file"] if given else []
    problems = []
    if len(directions) > 1:
        problems.append(f"{' and '.join(directions)}: choose one direction to move the ws along")
    if not amount:
        problems.append(f"{directions[0]}: give --edit-amount too, how far to move along it (e.g. 2)")
    moving = [mode for mode in modes if mode in ("--interp", "--style-mix")]
    if moving:
        problems.append(f"{directions[0]} with {moving[0]}: edits move the ws of single images and grids only")
    return problems


def edit_network_problems(o, G) -> list[str]:
    """What of the edit the network `G` cannot honour: no W space, a dimension or a w it does not have."""
    if o.edit_amount is None:
        return []
    if not G.has_w_space:
        return [f"--edit-amount: {o.network} is an R3GAN generator, which has no W space to move in"]
    problems = []
    if o.edit_dim is not None and o.edit_dim >= G.w_dim:
        problems.append(f"--edit-dim {o.edit_dim}: the ws of {o.network} have {G.w_dim} dimensions, 0 to {G.w_dim - 1}")
    beyond = [layer for layer in o.edit_layers or () if layer >= G.num_ws]
    if beyond:
        problems.append(f"--edit-layers: {o.network} has ws 0 to {G.num_ws - 1}, not {first_few(beyond)}")
    return problems
