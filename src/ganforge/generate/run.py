"""`ganforge generate`: images, a grid, a looping interpolation or a style-mixing table from any generator file, from
seeds or from the rows of projected latents (projected_w.npz).

Memory does not grow with the number of images except where one file holds them all (a grid, a table, a Pillow
animation); what that takes, and what a batch takes, is estimated and checked before the first image is made
(generate/needs.py, generate/budget.py), and every file to be written is checked first too, so a refusal leaves
nothing behind.
"""

import dataclasses
import math
import warnings
from pathlib import Path

import numpy as np
import torch

from ganforge import memory, outputs
from ganforge.data.files import read_file
from ganforge.data.images import BadImage
from ganforge.devices import pick_device
from ganforge.durable import WriteError, check_destination, write_problem
from ganforge.errors import UserError
from ganforge.generate import budget, labels, modes, writers
from ganforge.generate.edits import edit_offset
from ganforge.generate.needs import needs_of
from ganforge.generate.options import GenerateOptions
from ganforge.generate.render import Renderer
from ganforge.generate.sizes import shown_size
from ganforge.interop import load_network
from ganforge.metrics.shapes import image_size
from ganforge.nets.noise import noise_buffer_names
from ganforge.projected import read_projected


def generate(options: GenerateOptions) -> dict:
    """Everything `ganforge generate` does. Returns {"written": [file names], "images", "images_per_second",
    "device"}; the same options give byte-identical files on the same machine (see render.py for what --batch
    changes)."""
    _refuse(options.value_problems())  # options made in Python have not been through GenerateOptions.parse
    _refuse(options.count_problems())
    device = pick_device(options.device)
    animation = writers.animation_format(options.interp_format) if options.mode == "interp" else None
    outputs.check_writable_folder(options.outdir, "--outdir")
    G, _meta = load_network(options.network, device=device)
    options.check_network(G)
    c = label_vectors(options, G.c_dim)
    if options.label_file:
        options = dataclasses.replace(options, label_rows=len(c))
        _refuse(options.count_problems())
    projected, row_noise = read_projected_rows(options, G)
    if projected is not None:
        options = dataclasses.replace(options, projected_rows=len(projected))
        _refuse(options.count_problems())
    keys = modes.Keys(G, options, projected, c, edit_offset(options, G))
    names = _file_names(options, keys, animation)
    if animation:
        rows, cols = options.layout
        height, width = shown_size(image_size(G), options.size)
        writers.check_animation(animation, options.fps, cols * width, rows * height)
    transform = transform_of(options)
    renderer = Renderer(G, options.noise_mode, options.batch, options.image_count, transform, row_noise)
    try:
        _check_budget(G, options, renderer, device, animation)
        _make_outdir(options.outdir)
        for name in names:  # before any image is made: a refusal leaves nothing half done
            check_destination(options.outdir / name)
        _make(G, options, keys, renderer, names[0])
    finally:
        renderer.close()
    return {
        "written": names,
        "images": renderer.images,
        "images_per_second": renderer.images_per_second,
        "device": str(device),
    }


def _refuse(problems: list[str]) -> None:
    if problems:
        raise UserError(*problems)


def label_vectors(o: GenerateOptions, c_dim: int) -> torch.Tensor:
    """The label vectors every seed is made with, [V, c_dim] float32: the lines of --label-file, else one (--label,
    the one-hot vector of --class, or none at all for an unconditional network: [1, 0])."""
    if o.label_file is None:
        return torch.tensor([labels.one_vector(o.class_index, o.label, c_dim)], dtype=torch.float32)
    try:  # refused by its size before a byte is read
        data = read_file(o.label_file, labels.MAX_LABEL_FILE_BYTES)
    except BadImage as error:
        raise UserError(
            f"--label-file {o.label_file}: {error}; give a text file of at most "
            f"{memory.size_text(labels.MAX_LABEL_FILE_BYTES)}, one label vector per line"
        ) from None
    table = labels.parse_label_file(data, f"--label-file {o.label_file}", c_dim)
    return torch.frombuffer(table, dtype=torch.float32).reshape(-1, c_dim)


def read_projected_rows(o: GenerateOptions, G) -> tuple[torch.Tensor | None, dict[str, torch.Tensor] | None]:
    """The rows of the --projected-w files, in order, as ws [N, num_ws, w_dim] on the CPU, and the noise maps stored
    with them ({buffer: [N, H, W]}, when every file holds this network's); (None, None) without files. Each file is
    refused (before its arrays are read) unless its rows are ws of this network's shape."""
    if not o.projected_w:
        return None, None
    files = [read_projected(path, G.num_ws, G.w_dim) for path in o.projected_w]
    ws = torch.from_numpy(np.concatenate([f.w for f in files]))
    wanted = {name: tuple(G.synthesis.get_buffer(name).shape) for name in noise_buffer_names(G)}
    held = [path for path, f in zip(o.projected_w, files, strict=True) if f.noise]
    if not wanted or not held:
        return ws, None
    for path, f in zip(o.projected_w, files, strict=True):
        found = {name: tuple(value.shape[1:]) for name, value in f.noise.items()}
        if f.noise and found != wanted:
            raise UserError(
                f"{path}: its noise maps are not this network's ({len(found)} maps, the network has {len(wanted)} "
                "noise inputs of other names or sizes); use the network it was projected with"
            )
    if len(held) < len(files):
        warnings.warn(
            f"--projected-w: {held[0]} holds noise maps and {len(files) - len(held)} other file(s) do not; every row "
            "is rendered with the network's own noise",
            stacklevel=2,
        )
        return ws, None
    return ws, {name: torch.from_numpy(np.concatenate([f.noise[name] for f in files])) for name in wanted}


def _make(G, o: GenerateOptions, keys: modes.Keys, renderer: Renderer, first_name: str) -> None:
    pixels = writers.Pixels(o.size, o.resize)
    if o.mode == "interp":
        writers.write_animation(o.outdir / first_name, modes.frame_batches(G, o, keys, renderer, pixels), o.fps)
    elif o.mode == "style_mix":
        cells = (lambda names, made: writers.write_images(o.outdir, made, names)) if o.mix_cells else None
        modes.style_mix_table(G, o, keys.c, renderer, pixels, cells).write(o.outdir / first_name)
    elif o.mode == "grid":
        modes.grid_canvas(G, o, keys, renderer, pixels).write(o.outdir / first_name)
    else:
        for names, made in modes.image_batches(G, o, keys, renderer, pixels):
            writers.write_images(o.outdir, made, names)


def _file_names(o: GenerateOptions, keys: modes.Keys, animation: str | None) -> list[str]:
    if o.mode == "images":
        return keys.names(0, len(keys))
    if o.mode == "style_mix":
        return ["stylemix.png", *(modes.cell_names(o) if o.mix_cells else [])]
    return {"grid": ["grid.png"], "interp": [f"interp.{animation}"]}[o.mode]


def _make_outdir(outdir: Path) -> None:
    try:
        outdir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise WriteError(write_problem(outdir, error)) from None


def transform_of(o: GenerateOptions) -> torch.Tensor | None:
    """The StyleGAN3 input transform that moves every image by --translate and --rotate, or None."""
    if not o.moves:
        return None
    from ganforge.nets import input_transform

    return input_transform(o.translate, math.radians(o.rotate))


def _check_budget(G, o: GenerateOptions, renderer: Renderer, device: torch.device, animation: str | None) -> None:
    """Refuse what does not fit in memory (UserError with the figure); warn when the files may not fit on disk."""
    disk = check_memory(G, o, renderer, device, animation)
    free = outputs.free_bytes(o.outdir)
    if disk > free:
        warnings.warn(
            f"--outdir {o.outdir}: the images may need up to {memory.size_text(disk)} (their uncompressed "
            f"size), {memory.size_text(free)} is free there",
            stacklevel=2,
        )


def check_memory(G, o: GenerateOptions, renderer: Renderer, device: torch.device, animation: str | None) -> int:
    """Refuse what does not fit in memory (UserError with the figure); returns the bytes the files may take."""
    per_image = budget.synthesis_peak_bytes(G, renderer.synthesize_ws)
    needs, disk = needs_of(o, image_size(G), G.img_channels, per_image, device.type == "cuda", animation)
    memory.check(needs, memory.available_host_bytes(), memory.available_device_bytes(device))
    return disk


def closing_note(summary: dict, outdir: Path) -> str:
    written = summary["written"]
    what = written[0] if len(written) == 1 else f"{len(written)} images ({written[0]} ... {written[-1]})"
    return (
        f"wrote {what} to {outdir}: {summary['images']} images generated, "
        f"{summary['images_per_second']:.1f} img/s on {summary['device']}"
    )
