"""`ganforge generate`: images, a grid, a looping interpolation or a style-mixing table from any generator file.

Memory does not grow with the number of images except where one file holds them all (a grid, a table, a Pillow
animation); what that takes, and what a batch takes, is estimated and checked before the first image is made
(generate/budget.py), and every file to be written is checked first too, so a refusal leaves nothing behind.
"""

import math
import warnings
from pathlib import Path

import torch

from ganforge import outputs
from ganforge.devices import pick_device
from ganforge.durable import WriteError, check_destination, write_problem
from ganforge.generate import budget, writers
from ganforge.generate.latents import LoopPath, mix_styles, z_from_seeds
from ganforge.generate.options import GenerateOptions
from ganforge.generate.render import Renderer, map_latents
from ganforge.interop import load_network


def generate(options: GenerateOptions) -> dict:
    """Everything `ganforge generate` does. Returns {"written": [file names], "images", "images_per_second",
    "device"}; the same options give byte-identical files on the same machine (see render.py for what --batch
    changes)."""
    device = pick_device(options.device)
    animation = writers.animation_format(options.interp_format) if options.mode == "interp" else None
    names = _file_names(options, animation)
    outputs.check_writable_folder(options.outdir, "--outdir")
    G, _meta = load_network(options.network, device=device)
    options.check_network(G)
    renderer = Renderer(G, options.noise_mode, options.batch, options.image_count, _transform(options))
    try:
        _check_budget(G, options, renderer, device, animation)
        _make_outdir(options.outdir)
        for name in names:  # before any image is made: a refusal leaves nothing half done
            check_destination(options.outdir / name)
        if options.mode == "images":
            _images(G, options, renderer)
        elif options.mode == "grid":
            _grid(G, options, renderer)
        elif options.mode == "interp":
            _interp(G, options, renderer, names[0])
        else:
            _style_mix(G, options, renderer)
    finally:
        renderer.close()
    return {
        "written": names,
        "images": renderer.images,
        "images_per_second": renderer.images_per_second,
        "device": str(device),
    }


def _file_names(o: GenerateOptions, animation: str | None) -> list[str]:
    if o.mode == "images":
        return [f"seed{seed:07d}.png" for seed in o.seeds]
    return {"grid": ["grid.png"], "interp": [f"interp.{animation}"], "style_mix": ["stylemix.png"]}[o.mode]


def _make_outdir(outdir: Path) -> None:
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise WriteError(write_problem(outdir, error)) from None


def _transform(o: GenerateOptions) -> torch.Tensor | None:
    """The StyleGAN3 input transform that moves every image by --translate and --rotate, or None."""
    if not o.moves:
        return None
    from ganforge.nets import input_transform

    return input_transform(o.translate, math.radians(o.rotate))


def _check_budget(G, o: GenerateOptions, renderer: Renderer, device: torch.device, animation: str | None) -> None:
    """Refuse what does not fit in memory (UserError with the figure); warn when the files may not fit on disk."""
    per_image = budget.synthesis_peak_bytes(G, renderer.synthesize_ws)
    needs, disk = needs_of(o, G.resolution, G.img_channels, per_image, device.type == "cuda", animation)
    budget.check(needs, budget.available_host_bytes(), budget.available_device_bytes(device))
    free = outputs.free_bytes(o.outdir)
    if disk > free:
        warnings.warn(
            f"--outdir {o.outdir}: the images may need up to {budget.size_text(disk)} (their uncompressed "
            f"size), {budget.size_text(free)} is free there",
            stacklevel=2,
        )


def needs_of(o: GenerateOptions, res: int, channels: int, per_image: int, cuda: bool, animation: str | None):
    """What `o` holds in memory at once ([budget.Need]) and the uncompressed bytes of the files it writes."""
    image = res * res * channels  # bytes of one uint8 image
    rows, cols = o.style_mix if o.mode == "style_mix" else ((), ())
    batch = min(o.batch, max(len(rows) * len(cols), len(rows), len(cols), o.image_count if not rows else 0))
    smaller = "use a smaller --batch"
    needs = [
        budget.Need(
            f"--batch {o.batch}: {batch:,} images of {res} px synthesized at once", batch * per_image, cuda, smaller
        ),
        budget.Need(f"--batch {o.batch}: {batch:,} images of {res} px", batch * image * (4 + 1), False, smaller),
    ]
    if o.mode == "grid":
        r, c = o.grid
        what = f"--grid {r}x{c} at {res} px: a {c * res}x{r * res} image"
        needs.append(budget.Need(what, r * c * image, False, "make a smaller grid, or several"))
        return needs, r * c * image
    if o.mode == "style_mix":  # a blank corner, a row of column images, a column of row images
        r, c = len(rows) + 1, len(cols) + 1
        what = f"--style-mix of {len(rows):,} x {len(cols):,} seeds at {res} px: a {c * res}x{r * res} table"
        needs.append(budget.Need(what, r * c * image, False, "use fewer row or column seeds"))
        return needs, r * c * image
    if o.mode == "interp" and animation != "mp4":  # mp4 streams its frames to ffmpeg
        needs.append(
            budget.Need(
                f"--interp {o.interp}: {o.image_count:,} frames of {res} px in one {animation} file (held at once)",
                budget.FRAME_COPIES * o.image_count * image,
                False,
                "use fewer frames or seeds, or mp4 (pip install 'ganforge[video]'), which streams them",
            )
        )
    return needs, 0 if animation == "mp4" else o.image_count * image


def _ws(G, o: GenerateOptions, z: torch.Tensor) -> torch.Tensor:
    return map_latents(G, z, o.class_index, o.trunc, o.trunc_cutoff, o.batch)


def _images(G, o: GenerateOptions, render: Renderer) -> None:
    """One PNG per seed, batch by batch (memory does not grow with the number of seeds)."""
    for start in range(0, len(o.seeds), o.batch):
        seeds = o.seeds[start : start + o.batch]
        images = render(_ws(G, o, z_from_seeds(seeds, G.z_dim)), seeds)
        writers.write_images(o.outdir, images, [f"seed{seed:07d}.png" for seed in seeds])


def _grid(G, o: GenerateOptions, render: Renderer) -> None:
    """The seed images row-major, black cells after the last seed; made batch by batch into one canvas."""
    rows, cols = o.grid
    canvas = writers.Canvas(rows, cols, G.resolution, G.resolution, G.img_channels)
    for start in range(0, len(o.seeds), o.batch):
        seeds = o.seeds[start : start + o.batch]
        canvas.paste(start, render(_ws(G, o, z_from_seeds(seeds, G.z_dim)), seeds))
    canvas.write(o.outdir / "grid.png")


def _interp(G, o: GenerateOptions, render: Renderer, name: str) -> None:
    """A loop through the seeds: spherical in z (each frame mapped and truncated), or linear in w (truncation is
    linear in w, so interpolating truncated keys equals truncating interpolated ones). Noise follows the first seed
    in every frame, so it does not flicker. Frames are made batch by batch as the writer takes them."""
    z = z_from_seeds(o.seeds, G.z_dim)
    spherical = o.interp_space == "z"
    path = LoopPath(z if spherical else _ws(G, o, z), o.interp, spherical=spherical)

    def batches():
        for start in range(0, path.frames, o.batch):
            chunk = path.between(start, min(start + o.batch, path.frames))
            ws = _ws(G, o, chunk) if spherical else chunk
            yield writers.hwc(render(ws, [o.seeds[0]] * len(ws)))

    writers.write_animation(o.outdir / name, batches())


def _style_mix(G, o: GenerateOptions, render: Renderer) -> None:
    """The table of StyleGAN Fig. 3: a blank corner, the column images on top, the row images on the left, and in
    each cell the row's ws with the mixed layers taken from the column."""
    rows, cols = o.style_mix
    res, width = G.resolution, len(cols) + 1
    canvas = writers.Canvas(len(rows) + 1, width, res, res, G.img_channels)
    row_ws, col_ws = _ws(G, o, z_from_seeds(rows, G.z_dim)), _ws(G, o, z_from_seeds(cols, G.z_dim))
    for start in range(0, len(cols), o.batch):  # the top row: the column seeds' own images
        canvas.paste(1 + start, render(col_ws[start : start + o.batch], cols[start : start + o.batch]))
    for start in range(0, len(rows), o.batch):  # the left column: the row seeds' own images
        images = render(row_ws[start : start + o.batch], rows[start : start + o.batch])
        for i, image in enumerate(images, start=start):
            canvas.paste((i + 1) * width, image[None])
    layers = o.layers_to_mix(G.num_ws)
    cells = len(rows) * len(cols)
    for start in range(0, cells, o.batch):
        indices = range(start, min(start + o.batch, cells))
        ws = mix_styles(row_ws, col_ws, layers, cells=indices)
        images = render(ws, [rows[k // len(cols)] for k in indices])
        for k, image in zip(indices, images, strict=True):
            r, c = divmod(k, len(cols))
            canvas.paste((r + 1) * width + c + 1, image[None])
    canvas.write(o.outdir / "stylemix.png")


def closing_note(summary: dict, outdir: Path) -> str:
    written = summary["written"]
    what = written[0] if len(written) == 1 else f"{len(written)} images ({written[0]} ... {written[-1]})"
    return (
        f"wrote {what} to {outdir}: {summary['images']} images generated, "
        f"{summary['images_per_second']:.1f} img/s on {summary['device']}"
    )
