"""The four outputs of `ganforge generate`, each made batch by batch (handed back for run.py to write, or for
`files_in_memory` to encode): one PNG per seed (or per seed and label
vector), a grid, a looping interpolation (or a grid of them) and a style-mixing table; the first three from seeds or
from the rows of projected latents (`Keys`). Every image goes through `pixels` (rounded to uint8, brought to --size)
on its way into a file. Images keep the network's aspect: a non-square network's cells, frames and files are as
wide and tall as its images (at --size, the short side is --size)."""

import torch

from ganforge.generate import writers
from ganforge.generate.latents import LoopPath, mix_styles, z_from_seeds
from ganforge.generate.options import GenerateOptions
from ganforge.generate.render import Renderer, map_latents
from ganforge.generate.writers import Pixels
from ganforge.metrics.shapes import image_size


def seed_name(seed: int) -> str:
    return f"seed{seed:07d}.png"


def labelled_name(seed: int, vector: int, vectors: int) -> str:
    """The image of a seed with vector `vector` of a label file of `vectors`: seed0000007-label0003.png, with as many
    digits as the last vector needs (at least 4), so that the names sort by seed, then vector."""
    return f"seed{seed:07d}-label{vector:0{max(4, len(str(vectors - 1)))}d}.png"


def projected_name(row: int, rows: int) -> str:
    """The image of projected row `row` of `rows`: proj00.png as NVlabs' gen_images.py names it, with as many digits
    as the last row needs, so that the names sort in row order."""
    return f"proj{row:0{max(2, len(str(rows - 1)))}d}.png"


def cell_name(row_seed: int, col_seed: int) -> str:
    """The file of one mixed cell: the row seed's image with the column seed's mixed styles."""
    return f"mix{row_seed:07d}-{col_seed:07d}.png"


def cell_names(o: GenerateOptions) -> list[str]:
    """--mix-cells: the mixed cells' files, row by row, each once (a seed given twice names the same cell)."""
    rows, cols = o.style_mix
    return list(dict.fromkeys(cell_name(r, c) for r in rows for c in cols))


def _ws(G, o: GenerateOptions, z: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """Truncated ws of latents z [N, z_dim], each mapped with its label vector: c [N, c_dim], or [1, c_dim] for all
    (made contiguous, as a batch of vectors is: a broadcast view could take another kernel and round differently)."""
    return map_latents(G, z, c.expand(len(z), -1).contiguous(), o.trunc, o.trunc_cutoff, o.batch)


class Keys:
    """The latents an output is made from, in order, each with the seed its `random` noise is drawn from: the seeds,
    each with every label vector of c [V, c_dim] in turn (V is 1 unless a label file gives more), mapped (and
    truncated) to ws batch by batch; or the rows of projected ws [N, num_ws, w_dim], used as they are, row k drawing
    its noise from seed k. `offset` [num_ws, w_dim] (an edit, see edits.py), when given, is added to every key's ws."""

    def __init__(self, G, o: GenerateOptions, projected: torch.Tensor | None, c: torch.Tensor, offset=None):
        assert len(c) == 1 or (o.mode == "images" and projected is None), "parse refuses such a --label-file"
        self.G, self.o, self.projected, self.c, self.offset = G, o, projected, c, offset
        if projected is None:
            self.seeds = tuple(seed for seed in o.seeds for _ in range(len(c)))
        else:
            self.seeds = tuple(range(len(projected)))

    def __len__(self) -> int:
        return len(self.seeds)

    def ws(self, start: int, stop: int) -> torch.Tensor:
        if self.projected is not None:
            ws = self.projected[start:stop]
        else:
            vectors = self.c[torch.arange(start, stop) % len(self.c)]  # key k: seed k // V with vector k % V
            ws = _ws(self.G, self.o, z_from_seeds(self.seeds[start:stop], self.G.z_dim), vectors)
        return ws if self.offset is None else ws + self.offset

    def names(self, start: int, stop: int) -> list[str]:
        """The files of keys start .. stop - 1 as single images."""
        if self.projected is not None:
            return [projected_name(row, len(self)) for row in range(start, stop)]
        if self.o.label_file is None:
            return [seed_name(seed) for seed in self.seeds[start:stop]]
        return [labelled_name(self.seeds[k], k % len(self.c), len(self.c)) for k in range(start, stop)]


def image_batches(G, o: GenerateOptions, keys: Keys, render: Renderer, pixels: Pixels):
    """One image per seed or projected row, batch by batch (memory does not grow with their number): yields
    (file names, uint8 images [N, h, w, C])."""
    for start in range(0, len(keys), o.batch):
        stop = min(start + o.batch, len(keys))
        made = render(keys.ws(start, stop), keys.seeds[start:stop])
        yield keys.names(start, stop), pixels(made)


def grid_canvas(G, o: GenerateOptions, keys: Keys, render: Renderer, pixels: Pixels) -> writers.Canvas:
    """The images of the seeds or projected rows row-major, one per cell, made batch by batch into one canvas."""
    rows, cols = o.grid
    canvas = writers.Canvas(rows, cols, pixels.shape_of(image_size(G)), G.img_channels)
    for start in range(0, len(keys), o.batch):
        stop = min(start + o.batch, len(keys))
        canvas.paste(start, pixels(render(keys.ws(start, stop), keys.seeds[start:stop])))
    return canvas


def frame_batches(G, o: GenerateOptions, keys: Keys, render: Renderer, pixels: Pixels):
    """Batches of frames [T, rows * height, columns * width, C] uint8 of a loop through the keys, or with --grid of
    one loop per cell, cell k (row-major) through the k-th run of len(keys) / cells consecutive keys, as NVlabs'
    gen_video.py lays out its grid. Spherical in z (each frame mapped and truncated), or linear in w (truncation is
    linear in w, so interpolating truncated keys equals truncating interpolated ones; projected rows are ws, always
    interpolated so). Each cell's noise follows its first key's seed in every frame, so it does not flicker."""
    rows, cols = o.layout
    per_cell = len(keys) // (rows * cols)
    spherical = o.interp_space == "z" and keys.projected is None
    latents = z_from_seeds(o.seeds, G.z_dim) if spherical else keys.ws(0, len(keys))
    paths = [LoopPath(latents[k : k + per_cell], o.interp, spherical) for k in range(0, len(keys), per_cell)]
    noise_seeds = keys.seeds[::per_cell]
    for start in range(0, o.frames, o.frames_per_batch):
        count = min(o.frames_per_batch, o.frames - start)
        between = torch.cat([path.between(start, start + count) for path in paths])  # cell by cell
        ws = _ws(G, o, between, keys.c) if spherical else between
        yield writers.tile(pixels(render(ws, [seed for seed in noise_seeds for _ in range(count)])), rows, cols)


def style_mix_table(G, o: GenerateOptions, c: torch.Tensor, render: Renderer, pixels: Pixels, keep_cells=None):
    """The table of StyleGAN Fig. 3 as a canvas: a blank corner, the column images on top, the row images on the
    left, and in each cell the row's ws with the mixed layers taken from the column. `keep_cells`, when given, is
    called with each batch of mixed cells as (file names, uint8 images [N, h, w, C]) (--mix-cells). Every seed is
    mapped with the label vector c [1, c_dim]."""
    rows, cols = o.style_mix
    width = len(cols) + 1
    canvas = writers.Canvas(len(rows) + 1, width, pixels.shape_of(image_size(G)), G.img_channels)
    row_ws, col_ws = _ws(G, o, z_from_seeds(rows, G.z_dim), c), _ws(G, o, z_from_seeds(cols, G.z_dim), c)
    for start in range(0, len(cols), o.batch):  # the top row: the column seeds' own images
        canvas.paste(1 + start, pixels(render(col_ws[start : start + o.batch], cols[start : start + o.batch])))
    for start in range(0, len(rows), o.batch):  # the left column: the row seeds' own images
        made = pixels(render(row_ws[start : start + o.batch], rows[start : start + o.batch]))
        for i, image in enumerate(made, start=start):
            canvas.paste((i + 1) * width, image[None])
    layers = o.layers_to_mix(G.num_ws)
    cells = len(rows) * len(cols)
    for start in range(0, cells, o.batch):
        indices = range(start, min(start + o.batch, cells))
        made = pixels(
            render(mix_styles(row_ws, col_ws, layers, cells=indices), [rows[k // len(cols)] for k in indices])
        )
        places = [divmod(k, len(cols)) for k in indices]
        for (r, c), image in zip(places, made, strict=True):
            canvas.paste((r + 1) * width + c + 1, image[None])
        if keep_cells is not None:
            keep_cells([cell_name(rows[r], cols[c]) for r, c in places], made)
    return canvas
