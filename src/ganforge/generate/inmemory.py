"""What `ganforge generate` would write, made in memory from a generator already loaded: the same modes, renderer,
pixels and encoders as run.py, so each file's bytes are the ones generate writes for the same options on the same
device. `ganforge explore` answers its requests with it, keeping its networks loaded between requests.

Whole outputs are made from seeds only (no --projected-w or --label-file: both name files), and an interpolation is
WebP (GIF where Pillow has no WebP): an mp4 goes through ffmpeg's own file. One image of the images mode, from a seed
or a projected row, is made alone (`key_image`): it is that file of generate's output whenever generate makes each
image alone too (one seed, or --batch 1).
"""

import dataclasses

import numpy as np
import PIL.features
import torch

from ganforge.errors import UserError
from ganforge.generate import modes, writers
from ganforge.generate.edits import edit_offset
from ganforge.generate.options import GenerateOptions
from ganforge.generate.render import Renderer
from ganforge.generate.run import check_memory, label_vectors, read_projected_rows, transform_of
from ganforge.generate.sizes import shown_size
from ganforge.metrics.shapes import image_size


def in_memory_format() -> str:
    """The animation container an interpolation is made in here: WebP, else GIF."""
    return "webp" if PIL.features.check("webp") else "gif"


def files_in_memory(G, o: GenerateOptions, device: torch.device) -> dict[str, bytes]:
    """{file name: bytes} of what `generate(o)` writes, for options made by GenerateOptions.parse from seeds (their
    interp_format the one `in_memory_format` names), with G the network o.network loads on `device`. UserError for
    what G cannot honour or what does not fit in memory, as generate refuses it."""
    assert not o.projected_w and not o.label_file, "options that name files are generate's alone"
    assert o.mode != "interp" or o.interp_format == in_memory_format(), o.interp_format
    o.check_network(G)
    animation = in_memory_format() if o.mode == "interp" else None
    c = label_vectors(o, G.c_dim)
    keys = modes.Keys(G, o, None, c, edit_offset(o, G))
    if animation:
        rows, cols = o.layout
        height, width = shown_size(image_size(G), o.size)
        writers.check_animation(animation, o.fps, cols * width, rows * height)
    renderer = Renderer(G, o.noise_mode, o.batch, o.image_count, transform_of(o))
    try:
        check_memory(G, o, renderer, device, animation)
        return _encoded(G, o, keys, renderer, animation)
    finally:
        renderer.close()


def _encoded(G, o: GenerateOptions, keys: modes.Keys, renderer: Renderer, animation: str | None) -> dict[str, bytes]:
    pixels = writers.Pixels(o.size, o.resize)
    if o.mode == "interp":
        frames = modes.frame_batches(G, o, keys, renderer, pixels)
        return {f"interp.{animation}": writers.animation_bytes(animation, frames, o.fps)}
    if o.mode == "grid":
        return {"grid.png": modes.grid_canvas(G, o, keys, renderer, pixels).png_bytes()}
    files = {}

    def keep(names, made) -> None:
        files.update(zip(names, (writers.png_bytes(array) for array in made), strict=True))

    if o.mode == "style_mix":
        table = modes.style_mix_table(G, o, keys.c, renderer, pixels, keep if o.mix_cells else None)
        return {"stylemix.png": table.png_bytes(), **files}
    for names, made in modes.image_batches(G, o, keys, renderer, pixels):
        keep(names, made)
    return files


def image_keys(G, o: GenerateOptions, key: int) -> tuple[GenerateOptions, modes.Keys, dict | None]:
    """(o with its projected rows counted, the keys of o's images, the noise maps of the projected rows or None), as
    generate reads them; UserError for what G cannot honour, for files it refuses and for a `key` beyond them."""
    assert not o.label_file, "options that name label files are generate's alone"
    o.check_network(G)
    projected, row_noise = read_projected_rows(o, G)
    if projected is not None:
        o = dataclasses.replace(o, projected_rows=len(projected))
        problems = o.count_problems()
        if problems:
            raise UserError(*problems)
    keys = modes.Keys(G, o, projected, label_vectors(o, G.c_dim), edit_offset(o, G))
    if key >= len(keys):
        what = f"{o.projected_w[0]} holds {len(keys)} rows" if o.projected_w else f"there are {len(keys)} seeds"
        raise UserError(f"row {key}: {what}, numbered from 0")
    return o, keys, row_noise


def key_image(G, o: GenerateOptions, key: int, device: torch.device) -> tuple[str, np.ndarray]:
    """(file name, uint8 pixels [h, w, C]) of image `key` (a seed's place in --seeds, or a projected row) of the
    images mode, made alone."""
    assert o.mode == "images", o.mode
    o, keys, row_noise = image_keys(G, o, key)
    renderer = Renderer(G, o.noise_mode, 1, 1, transform_of(o), row_noise)
    try:
        check_memory(G, dataclasses.replace(o, batch=1), renderer, device, None)
        made = writers.Pixels(o.size, o.resize)(renderer(keys.ws(key, key + 1), keys.seeds[key : key + 1]))
    finally:
        renderer.close()
    return keys.names(key, key + 1)[0], made[0]
