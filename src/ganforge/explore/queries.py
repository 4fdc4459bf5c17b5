"""A request's query parameters -> the GenerateOptions of the `ganforge generate` command that makes its image.

Every parameter is hostile. Each has a name taken from generate's flag (`trunc` for --trunc, `noise-mode` for
--noise-mode), is refused unless the endpoint takes it, may appear once and is at most MAX_VALUE_CHARS long; then
GenerateOptions.parse checks the values with the limits of generate itself. On top of those, one request may ask for
only as much as a page shows (MAX_GRID_CELLS, MAX_INTERP_SEEDS, MAX_INTERP_FRAMES), so that one browser tab cannot
keep the server busy for minutes. No parameter names a file: a network is its index in the --network list, a latent
file (`latent`, `edit-file`) a name the server lists itself (latents.py).

One image (`image`, its feature maps `layer`, its `spectrum`) comes from a seed or from row `row` of a latent file;
its ws may be moved (generate's --edit-* flags). A latent file's image is generate's with --batch 1, which makes each
row alone, as the page does.
"""

import dataclasses
import re
from pathlib import Path

from ganforge.errors import UserError
from ganforge.explore.latents import NO_LATENTS, LatentFiles
from ganforge.generate.inmemory import in_memory_format
from ganforge.generate.options import NOISE_MODES, GenerateOptions
from ganforge.generate.typed import MAX_SEED, echoed

MAX_VALUE_CHARS = 4096  # a label vector of a few hundred classes; nothing else comes near
MAX_GRID_CELLS = 64  # a seed page: 8x8
MAX_INTERP_SEEDS = 16
MAX_INTERP_FRAMES = 480  # all frames of one loop: 16 s at 30 fps
MAX_FEATURE_CHANNELS = 16
# Parameters of every image request: which network, and what generate's options make of its latents
COMMON = ("net", "trunc", "trunc-cutoff", "class", "label", "noise-mode", "translate", "rotate", "token")
# One image: its latent (a seed, or a row of a latent file) and how its ws move
ONE_IMAGE = ("seed", "latent", "row", "edit-dim", "edit-seed", "edit-file", "edit-amount", "edit-layers")
ENDPOINT_PARAMETERS = {
    "image": ONE_IMAGE,
    "grid": ("page", "grid"),
    "mix": ("seed", "source", "mix-layers"),
    "interp": ("seeds", "interp"),
    "layer": (*ONE_IMAGE, "layer", "channels", "channel"),
    "spectrum": ONE_IMAGE,
}
WHOLE = re.compile(r"[0-9]{1,10}")


class BadRequest(UserError):
    """A request the server refuses with HTTP 400 and this message."""


@dataclasses.dataclass(frozen=True)
class Query:
    """One image request: the network's index, the options of the generate command that makes the image, the file
    of its output that is the image (None: a latent file's row, named once the file is read), which image of the
    images mode (`key`: the seed's or the row's place), (layer requests) which feature maps of which layer, and
    the (modification time, size) of the files it reads, so that a file rewritten is not answered from the cache."""

    net: int
    options: GenerateOptions
    file: str | None
    key: int = 0
    layer: str | None = None
    channels: int = 0
    channel: int | None = None
    stamps: tuple = ()


def parse_query(
    endpoint: str, pairs: list[tuple[str, str]], networks: list[Path], device: str, latents: LatentFiles = NO_LATENTS
) -> Query:
    """The query of `endpoint` from the request's (name, value) pairs; BadRequest naming the parameter otherwise.
    `networks` are the files of the --network list, in order; `device` where the images are made; `latents` the
    LatentFiles that `latent` and `edit-file` name."""
    values = _values(endpoint, pairs)
    net = _whole(values, "net", 0)
    if net >= len(networks):
        raise BadRequest(f"net={net}: there are {len(networks)} network(s), numbered from 0")
    fields = _fields(endpoint, values, latents)
    options = GenerateOptions.parse(
        network=networks[net],
        outdir=Path("out"),
        device=device,
        trunc=_number(values, "trunc"),
        trunc_cutoff=_whole(values, "trunc-cutoff"),
        class_index=_whole(values, "class"),
        label=values.get("label"),
        noise_mode=_choice(values, "noise-mode", NOISE_MODES, "const"),
        translate=values.get("translate"),
        rotate=_number(values, "rotate"),
        **fields,
    )
    file = None if options.projected_w else _file_of(endpoint, options)
    files = [*options.projected_w, *([options.edit_file] if options.edit_file else [])]
    one = dict(key=_whole(values, "row", 0), stamps=tuple(latents.stamp(path) for path in files))
    if endpoint != "layer":
        return Query(net, options, file, **one if endpoint in ("image", "spectrum") else {})
    channels = _whole(values, "channels", 8)
    if not 1 <= channels <= MAX_FEATURE_CHANNELS:
        raise BadRequest(f"channels={channels}: show from 1 to {MAX_FEATURE_CHANNELS} feature maps")
    layer = _required(values, "layer")
    return Query(net, options, file, layer=layer, channels=channels, channel=_whole(values, "channel"), **one)


def _values(endpoint: str, pairs: list[tuple[str, str]]) -> dict[str, str]:
    known = (*COMMON, *ENDPOINT_PARAMETERS[endpoint])
    values = {}
    for name, value in pairs:
        if name not in known:
            raise BadRequest(f"{echoed(name, 40)}: not a parameter of /api/{endpoint}; it takes {', '.join(known)}")
        if name in values:
            raise BadRequest(f"{name}: given twice; give it once")
        if len(value) > MAX_VALUE_CHARS:
            raise BadRequest(f"{name}: {len(value):,} characters, more than {MAX_VALUE_CHARS:,}; shorten it")
        values[name] = value
    return values


def _fields(endpoint: str, values: dict[str, str], latents: LatentFiles) -> dict:
    """generate's options for what `endpoint` makes: one image (its file, its feature maps or its spectrum), a page
    of a seed grid, one mixed cell (the seed's image with the `mix-layers` styles of `source`), or a loop through
    `seeds`."""
    if endpoint in ("image", "layer", "spectrum"):
        return _one_image(values, latents)
    if endpoint == "mix":
        rows, cols = _seed(values, "seed"), _seed(values, "source")
        return {"style_mix": (rows, cols), "mix_layers": values.get("mix-layers"), "mix_cells": True}
    if endpoint == "grid":
        return {"seeds": _page_seeds(values), "grid": values.get("grid", "4x4")}
    frames = _whole(values, "interp", 24)
    return {"seeds": _required(values, "seeds"), "interp": frames, "interp_format": in_memory_format()}


def _one_image(values: dict[str, str], latents: LatentFiles) -> dict:
    """One image's latent (`seed`, or `latent` and its `row`) and its edit, as generate's options."""
    if "latent" in values:
        if "seed" in values:
            raise BadRequest("seed and latent: an image comes from one of them; give seed or latent")
        fields = {"projected_w": (latents.path(values["latent"], "latent"),), "batch": 1}
    elif "row" in values:
        raise BadRequest("row: a row of a latent file; give latent too, or leave row out")
    else:
        fields = {"seeds": _seed(values, "seed")}
    edit_file = values.get("edit-file")
    return fields | {
        "edit_dim": _whole(values, "edit-dim"),
        "edit_seed": _whole(values, "edit-seed"),
        "edit_file": latents.path(edit_file, "edit-file") if edit_file is not None else None,
        "edit_amount": _number(values, "edit-amount"),
        "edit_layers": values.get("edit-layers"),
    }


def _page_seeds(values: dict[str, str]) -> str:
    """Page P of a grid of R x C cells: seeds P * R * C onwards."""
    match = re.fullmatch(r"([0-9]{1,3})x([0-9]{1,3})", values.get("grid", "4x4"))
    if match is None or not 1 <= int(match[1]) * int(match[2]) <= MAX_GRID_CELLS:
        raise BadRequest(
            f"grid={echoed(values['grid'])}: write ROWSxCOLUMNS of at most {MAX_GRID_CELLS} cells, e.g. 4x4"
        )
    cells = int(match[1]) * int(match[2])
    page = _whole(values, "page", 0)
    if (page + 1) * cells - 1 > MAX_SEED:
        raise BadRequest(f"page={page}: its seeds pass {MAX_SEED}; the last page is {(MAX_SEED + 1) // cells - 1}")
    return f"{page * cells}-{(page + 1) * cells - 1}"


def _file_of(endpoint: str, o: GenerateOptions) -> str:
    """The file of the generate command's output that is the image shown."""
    if endpoint == "interp":
        if len(o.seeds) > MAX_INTERP_SEEDS:
            raise BadRequest(f"seeds: {len(o.seeds):,} seeds; a loop here goes through at most {MAX_INTERP_SEEDS}")
        if o.image_count > MAX_INTERP_FRAMES:
            raise BadRequest(
                f"interp={o.interp}: {o.image_count} frames in all, more than {MAX_INTERP_FRAMES}; give fewer frames "
                "per seed or fewer seeds"
            )
        return f"interp.{in_memory_format()}"
    if endpoint == "grid":
        return "grid.png"
    if endpoint == "mix":
        (row,), (col,) = o.style_mix
        return f"mix{row:07d}-{col:07d}.png"
    return f"seed{o.seeds[0]:07d}.png"


def _seed(values: dict[str, str], name: str) -> str:
    text = _required(values, name)
    if not WHOLE.fullmatch(text) or int(text) > MAX_SEED:
        raise BadRequest(f"{name}={echoed(text, 20)}: a seed is a whole number from 0 to {MAX_SEED}")
    return text


def _required(values: dict[str, str], name: str) -> str:
    if name not in values:
        raise BadRequest(f"{name}: missing; give it, e.g. {name}=0" if name != "layer" else "layer: missing; name one")
    return values[name]


def _whole(values: dict[str, str], name: str, default: int | None = None) -> int | None:
    if name not in values:
        return default
    if not WHOLE.fullmatch(values[name]):
        raise BadRequest(
            f"{name}={echoed(values[name], 20)}: must be a whole number of at most 10 digits, e.g. {name}=1"
        )
    return int(values[name])


def _number(values: dict[str, str], name: str) -> float | None:
    """A float as generate's flag takes it (NaN and infinities too: generate's range check refuses them)."""
    if name not in values:
        return None
    try:
        return float(values[name])
    except ValueError:
        raise BadRequest(f"{name}={echoed(values[name], 20)}: must be a number, e.g. {name}=0.7") from None


def _choice(values: dict[str, str], name: str, choices: tuple[str, ...], default: str) -> str:
    value = values.get(name, default)
    if value not in choices:
        raise BadRequest(f"{name}={echoed(value, 20)}: one of {', '.join(choices)}")
    return value
