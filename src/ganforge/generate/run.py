"""`ganforge generate`: images, a grid, a looping interpolation or a style-mixing table from any generator file."""

import math
from pathlib import Path

import torch

from ganforge.devices import pick_device
from ganforge.generate import writers
from ganforge.generate.latents import loop_path, mix_styles, z_from_seeds
from ganforge.generate.options import GenerateOptions
from ganforge.generate.render import Renderer, map_latents
from ganforge.interop import load_network


def generate(options: GenerateOptions) -> dict:
    """Everything `ganforge generate` does. Returns {"written": [file names], "images", "images_per_second",
    "device"}; the same options give byte-identical files on the same machine."""
    device = pick_device(options.device)
    animation = writers.animation_format(options.interp_format) if options.mode == "interp" else None
    G, _meta = load_network(options.network, device=device)
    options.check_network(G)
    options.outdir.mkdir(parents=True, exist_ok=True)
    renderer = Renderer(G, options.noise_mode, options.batch, _image_count(options), _transform(options))
    try:
        if options.mode == "images":
            written = _images(G, options, renderer)
        elif options.mode == "grid":
            written = _grid(G, options, renderer)
        elif options.mode == "interp":
            written = _interp(G, options, renderer, animation)
        else:
            written = _style_mix(G, options, renderer)
    finally:
        renderer.close()
    return {"written": written, "images": renderer.images, "images_per_second": renderer.images_per_second,
            "device": str(device)}  # fmt: skip


def _transform(o: GenerateOptions) -> torch.Tensor | None:
    """The StyleGAN3 input transform that moves every image by --translate and --rotate, or None."""
    if not o.moves:
        return None
    from ganforge.nets import input_transform

    return input_transform(o.translate, math.radians(o.rotate))


def _image_count(o: GenerateOptions) -> int:
    if o.mode == "interp":
        return len(o.seeds) * o.interp
    if o.mode == "style_mix":
        rows, cols = o.style_mix
        return len(rows) + len(cols) + len(rows) * len(cols)
    return len(o.seeds)


def _ws(G, o: GenerateOptions, z: torch.Tensor) -> torch.Tensor:
    return map_latents(G, z, o.class_index, o.trunc, o.trunc_cutoff, o.batch)


def _images(G, o: GenerateOptions, render: Renderer) -> list[str]:
    """One PNG per seed, batch by batch (memory does not grow with the number of seeds)."""
    names = []
    for start in range(0, len(o.seeds), o.batch):
        seeds = o.seeds[start : start + o.batch]
        chunk = [f"seed{seed:07d}.png" for seed in seeds]
        writers.write_images(o.outdir, render(_ws(G, o, z_from_seeds(seeds, G.z_dim)), seeds), chunk)
        names += chunk
    return names


def _grid(G, o: GenerateOptions, render: Renderer) -> list[str]:
    rows, cols = o.grid
    images = render(_ws(G, o, z_from_seeds(o.seeds, G.z_dim)), o.seeds)
    blank = torch.full([rows * cols - len(images), *images.shape[1:]], -1.0)  # black cells after the last seed
    writers.write_grid(o.outdir / "grid.png", torch.cat([images, blank]), cols)
    return ["grid.png"]


def _interp(G, o: GenerateOptions, render: Renderer, animation: str) -> list[str]:
    """A loop through the seeds: spherical in z (each frame mapped and truncated), or linear in w (truncation is
    linear in w, so interpolating truncated keys equals truncating interpolated ones). Noise follows the first seed
    in every frame, so it does not flicker."""
    z = z_from_seeds(o.seeds, G.z_dim)
    if o.interp_space == "z":
        ws = _ws(G, o, loop_path(z, o.interp, spherical=True))
    else:
        ws = loop_path(_ws(G, o, z), o.interp, spherical=False)
    noise_seeds = [o.seeds[0]] * len(ws)
    chunks = (
        writers.hwc(render(ws[i : i + o.batch], noise_seeds[i : i + o.batch])) for i in range(0, len(ws), o.batch)
    )
    name = f"interp.{animation}"
    writers.write_animation(o.outdir / name, chunks)
    return [name]


def _style_mix(G, o: GenerateOptions, render: Renderer) -> list[str]:
    """The table of StyleGAN Fig. 3: a blank corner, the column images on top, the row images on the left, and in
    each cell the row's ws with the mixed layers taken from the column."""
    rows, cols = o.style_mix
    row_ws, col_ws = _ws(G, o, z_from_seeds(rows, G.z_dim)), _ws(G, o, z_from_seeds(cols, G.z_dim))
    top, left = render(col_ws, cols), render(row_ws, rows)
    cells = render(mix_styles(row_ws, col_ws, o.layers_to_mix(G.num_ws)), [r for r in rows for _ in cols])
    table = [torch.full_like(top[:1], -1.0), top]
    for i in range(len(rows)):
        table += [left[i : i + 1], cells[i * len(cols) : (i + 1) * len(cols)]]
    writers.write_grid(o.outdir / "stylemix.png", torch.cat(table), len(cols) + 1)
    return ["stylemix.png"]


def closing_note(summary: dict, outdir: Path) -> str:
    written = summary["written"]
    what = written[0] if len(written) == 1 else f"{len(written)} images ({written[0]} ... {written[-1]})"
    return (f"wrote {what} to {outdir}: {summary['images']} images generated, "
            f"{summary['images_per_second']:.1f} img/s on {summary['device']}")  # fmt: skip
