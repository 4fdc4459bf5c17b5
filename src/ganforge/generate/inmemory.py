"""What `ganforge generate` would write, made in memory from a generator already loaded: the same modes, renderer,
pixels and encoders as run.py, so each file's bytes are the ones generate writes for the same options on the same
device. `ganforge explore` answers its requests with it, keeping its networks loaded between requests.

Only seeds are taken here (no --projected-w or --label-file: both name files), and an interpolation is WebP (GIF
where Pillow has no WebP): an mp4 goes through ffmpeg's own file.
"""

import PIL.features
import torch

from ganforge.generate import modes, writers
from ganforge.generate.options import GenerateOptions
from ganforge.generate.render import Renderer
from ganforge.generate.run import check_memory, label_vectors, transform_of
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
    keys = modes.Keys(G, o, None, c)
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
