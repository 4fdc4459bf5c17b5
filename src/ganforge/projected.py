"""Projected latents as a file: `projected_w.npz`, the layout of NVlabs' projector (stylegan2-ada-pytorch
`projector.py` writes it, `gen_images.py --projected-w` reads it).

The file is an uncompressed zip as `numpy.savez` writes it, holding the array `w`: float32 [N, num_ws, w_dim], one
W+ latent per row (the official projector writes N = 1). `ganforge project` also stores the noise maps it optimised
beside it, one array `noise.<buffer>` float32 [N, H, W] per noise input of the network (official readers take `w`
and ignore them; `ganforge generate --projected-w` renders with them, so it makes exactly the projection's image).
ganforge reads float16 and float64 too, converted to float32: float16 converts exactly, and a float64 row is rounded
to float32 when it enters the network anyway, so a user's own file of interpolated rows (numpy computes in float64)
need not be converted by hand.

A file to read may be hostile. It is read once, whole, from a regular file of at most MAX_BYTES, and judged before any
array is made: the zip's end record (one member, nothing after it, no zip64 record that would make the zip reader
list millions of members), each member (`w.npy` once, `noise.<buffer>.npy` at most MAX_NOISE_MAPS times; stored, of
the size its .npy header declares, inside the file, together no more than the file), each header (version 1.0 of at
most MAX_HEADER_CHARS, which bounds the literal numpy parses; a floating-point dtype; three dimensions within the
limits, or the network's; the noise maps square or of a non-square network's aspect, of w's N rows). Only then does
numpy read the arrays, without pickle; their values must be finite. Every problem is one UserError naming the file
and what to do.
"""

import dataclasses
import io
import math
import os
import re
import stat
import struct
import zipfile
from pathlib import Path
from tokenize import TokenError

import numpy as np

from ganforge import limits
from ganforge.durable import replace_file, shorten
from ganforge.errors import UserError

KEY = "w"
MEMBER = f"{KEY}.npy"
# ws per latent: StyleGAN2 has two per resolution from 8 px up, one at 4 px and the last toRGB's (18 at 1024 px);
# StyleGAN3 one per synthesis layer, the input's and the output's.
MAX_NUM_WS = max(2 * int(math.log2(limits.MAX_RESOLUTION)) - 2, limits.MAX_SYNTHESIS_LAYERS + 2)
# A row of a 1024 px FFHQ generator (18 x 512 float32) is 36 KiB: 512 MiB hold about 14,000 of them, and projecting
# one image takes a GPU about a minute, so no projection comes near; a reader holds the file and its array at once,
# about twice this.
MAX_BYTES = 512 * 2**20
# numpy writes the header of a 3-D float array in 128 bytes; the bound keeps the literal that numpy parses far from
# the depth at which Python's parser runs out of stack (thousands of nested operators: a RecursionError or a
# MemoryError, not a message).
MAX_HEADER_CHARS = 1024
MAX_DIRECTORY_BYTES = 1024  # per zip directory entry: 46 bytes, the name, and an extra field if any
# Noise inputs of a StyleGAN2 generator: one at 4 px and two per resolution above (17 at 1024 px); StyleGAN3 has none.
MAX_NOISE_MAPS = 2 * int(math.log2(limits.MAX_RESOLUTION)) - 3
NOISE_PREFIX = "noise."
_NOISE_MEMBER = re.compile(r"noise\.[A-Za-z0-9_.]{1,200}\.npy")  # a buffer's dotted module path
FLOAT_SIZES = (2, 4, 8)  # float16, float32, float64
_END = struct.Struct("<4s4H2LH")  # the zip's end-of-central-directory record (APPNOTE 4.3.16), no comment
# A zip64 end locator right before the end record sends zip readers to a zip64 record for the member count.
_ZIP64_LOCATOR, _LOCATOR_SIZE = b"PK\x06\x07", 20
# What zipfile and numpy raise for bytes that are no zip or .npy, are cut short, or use a zip feature (a compression
# method, a version) that zipfile lacks; numpy's parser of an old-style .npy header lets tokenize's error and a
# SyntaxError out for a malformed one.
_UNREADABLE = (
    OSError,
    ValueError,
    EOFError,
    KeyError,
    NotImplementedError,
    SyntaxError,
    TokenError,
    zipfile.BadZipFile,
)
_WRITTEN_BY = "give a projected_w.npz as `ganforge project` or NVlabs' projector.py writes it"


@dataclasses.dataclass(frozen=True)
class Projected:
    """A projected_w.npz's rows: ws float32 [N, num_ws, w_dim], and the noise maps stored beside them by buffer name,
    float32 [N, H, W] each (empty when the file holds none)."""

    w: np.ndarray
    noise: dict[str, np.ndarray]


def write_projected_w(path: Path, w: np.ndarray, noise: dict[str, np.ndarray] | None = None) -> None:
    """`w` [N, num_ws, w_dim] (and `noise`, {buffer name: [N, H, W]}) as projected_w.npz at `path`, atomically (see
    ganforge.durable). Converted to float32, the official dtype; finite: a projection that diverged is the caller's
    to report, not a file to write."""
    arrays = {KEY: np.ascontiguousarray(w, dtype=np.float32)}
    arrays |= {NOISE_PREFIX + name: np.ascontiguousarray(v, dtype=np.float32) for name, v in (noise or {}).items()}
    w = arrays[KEY]
    assert w.ndim == 3 and min(w.shape) >= 1 and all(np.isfinite(a).all() for a in arrays.values()), w.shape
    assert all(a.ndim == 3 and a.shape[0] == w.shape[0] for a in arrays.values()) and len(arrays) <= 1 + MAX_NOISE_MAPS
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)  # float arrays are written without pickle
    assert buffer.tell() <= MAX_BYTES, buffer.tell()
    replace_file(path, buffer.getvalue())


def read_projected_w(path: Path, num_ws: int | None = None, w_dim: int | None = None) -> np.ndarray:
    """The rows of a projected_w.npz: float32 [N, num_ws, w_dim] (see `read_projected`)."""
    return read_projected(path, num_ws, w_dim).w


def read_projected(path: Path, num_ws: int | None = None, w_dim: int | None = None) -> Projected:
    """The rows of a projected_w.npz and the noise maps beside them. With `num_ws` and `w_dim` (the network's), a file
    of another shape is refused before its arrays are read. UserError for anything else than such a file."""
    data = _file_bytes(Path(path))
    problem = _layout_problem(data, num_ws, w_dim)
    if problem is None:
        try:
            with np.load(io.BytesIO(data), allow_pickle=False, max_header_size=MAX_HEADER_CHARS) as npz:
                arrays = {key: npz[key] for key in npz.files}
        except _UNREADABLE:
            problem = f"an array cannot be read (damaged?); {_WRITTEN_BY}"
    if problem is not None:
        raise UserError(f"{shorten(path)}: {problem}")
    for key, value in arrays.items():
        with np.errstate(over="ignore"):  # a float64 beyond float32's range becomes infinite, and is refused below
            arrays[key] = value = value.astype(np.float32, copy=False)
        bad = value.size - np.count_nonzero(np.isfinite(value))
        if bad:
            raise UserError(
                f"{shorten(path)}: {bad:,} of the {value.size:,} values of {limits.shown_name(key)} are not finite "
                "float32 numbers (NaN, infinite or too large); project the image again"
            )
    noise = {key.removeprefix(NOISE_PREFIX): value for key, value in arrays.items() if key != KEY}
    return Projected(arrays[KEY], noise)


def _file_bytes(path: Path) -> bytes:
    """The whole file, when it is a regular file of at most MAX_BYTES. Opened without blocking and checked on the
    open descriptor, so that a FIFO or a device in its place can neither stall the reader nor feed it without end;
    read once, so that what is judged is what is loaded."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise UserError(f"{shorten(path)}: no such file; {_WRITTEN_BY}") from None
    except OSError as error:
        raise UserError(f"{shorten(path)}: cannot be read ({error.strerror or error})") from None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UserError(f"{shorten(path)}: not a regular file; {_WRITTEN_BY}")
        if info.st_size > MAX_BYTES:
            raise UserError(_too_big(path, info.st_size))
        try:
            data = file.read(MAX_BYTES + 1)  # one byte more tells that it grew since it was measured
        except OSError as error:
            raise UserError(f"{shorten(path)}: cannot be read ({error.strerror or error})") from None
    if len(data) > MAX_BYTES:
        raise UserError(_too_big(path, len(data)))
    return data


def _too_big(path: Path, size: int) -> str:
    return (
        f"{shorten(path)}: {size:,} bytes, more than a projected_w.npz may hold ({MAX_BYTES:,}); split its rows "
        "into several files"
    )


def _layout_problem(data: bytes, num_ws: int | None, w_dim: int | None) -> str | None:
    """What is wrong with the file's bytes as a projected_w.npz, judged without making the array; None when
    numpy may read it."""
    if data.startswith(b"\x93NUMPY"):
        return f"a .npy array, not an .npz holding w; write it with numpy.savez(path, {KEY}=w)"
    if not data.startswith(b"PK\x03\x04") or len(data) < _END.size:
        return f"not an .npz (a zip of .npy arrays): truncated, or another kind of file? {_WRITTEN_BY}"
    signature, disk, start_disk, here, entries, size, offset, comment = _END.unpack(data[-_END.size :])
    if signature != b"PK\x05\x06" or comment or disk or start_disk or here != entries:
        return f"its zip directory is damaged or has a comment (truncated?); {_WRITTEN_BY}"
    if not 1 <= entries <= 1 + MAX_NOISE_MAPS:
        return (
            f"holds {entries:,} arrays; a projected_w.npz holds {KEY} and at most {MAX_NOISE_MAPS} noise maps beside it"
        )
    locator = data[-_END.size - _LOCATOR_SIZE : -_END.size]
    directory_ok = size <= MAX_DIRECTORY_BYTES * entries and offset + size + _END.size == len(data)
    if not directory_ok or locator.startswith(_ZIP64_LOCATOR):
        return f"its zip directory is not the one numpy.savez writes (altered?); {_WRITTEN_BY}"
    try:
        return _members_problem(zipfile.ZipFile(io.BytesIO(data)), entries, offset, num_ws, w_dim)
    except _UNREADABLE:
        return f"an array cannot be read (damaged?); {_WRITTEN_BY}"


def _members_problem(archive, entries: int, directory: int, num_ws: int | None, w_dim: int | None) -> str | None:
    """`w.npy` once and noise maps, each stored whole before the zip directory, together no larger than the part
    of the file before it, each .npy header declaring exactly its bytes; the noise maps [N, H, W] of w's N."""
    infos = archive.infolist()
    if len(infos) != entries:  # the end record said one count, the directory holds another
        return f"its zip directory lists {len(infos):,} arrays, its end record {entries:,} (altered?); {_WRITTEN_BY}"
    names = [info.filename for info in infos]
    if names.count(MEMBER) != 1:
        others = ", ".join(limits.shown_name(name.removesuffix(".npy")) for name in names[:3])
        return f"holds arrays named {others}, not one named {KEY}; save the latents as numpy.savez(path, {KEY}=w)"
    strangers = [name for name in names if name != MEMBER and not _NOISE_MEMBER.fullmatch(name)]
    if strangers:
        name = limits.shown_name(strangers[0].removesuffix(".npy"))
        return f"holds an array named {name}, neither {KEY} nor a noise map; save latents as numpy.savez(path, {KEY}=w)"
    for info in infos:
        key = limits.shown_name(info.filename.removesuffix(".npy"))
        if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1:
            return f"its {key} is compressed or encrypted; write it with numpy.savez (uncompressed), as projectors do"
        if info.compress_size != info.file_size or info.header_offset + info.file_size > directory:
            return f"declares a {key}.npy larger than the file (truncated?); {_WRITTEN_BY}"
    if sum(info.file_size for info in infos) > directory:
        return f"declares arrays that together are larger than the file (altered?); {_WRITTEN_BY}"
    shapes = {}
    for info in infos:
        problem, shapes[info.filename] = _member_problem(archive, info, num_ws, w_dim)
        if problem is not None:
            return problem
    rows = shapes[MEMBER][0]
    for name, shape in shapes.items():
        if name != MEMBER and (shape[0] != rows or not _map_size_ok(*shape[1:])):
            return (
                f"its {limits.shown_name(name.removesuffix('.npy'))} has shape {limits.shown(list(shape))}, not "
                f"{rows} maps of at most {limits.MAX_RESOLUTION} px, square or of a non-square StyleGAN2's aspect "
                f"(one per row of {KEY}); {_WRITTEN_BY}"
            )
    return None


def _map_size_ok(height: int, width: int) -> bool:
    """A noise map's sides: square (StyleGAN3's maps are not powers of two), or two powers of two, as a non-square
    StyleGAN2's layers are; at most MAX_RESOLUTION either way."""
    if max(height, width) > limits.MAX_RESOLUTION:
        return False
    return height == width or all(side >= 1 and side & (side - 1) == 0 for side in (height, width))


def _member_problem(archive, info, num_ws, w_dim) -> tuple[str | None, tuple]:
    """(what is wrong with one member's .npy header, or None; its declared shape)."""
    key = info.filename.removesuffix(".npy")
    with archive.open(info) as member:
        version = np.lib.format.read_magic(member)
        if version != (1, 0):
            return f"its {info.filename} is a .npy of version {version[0]}.{version[1]}; numpy writes 1.0", ()
        try:
            shape, _fortran, dtype = np.lib.format.read_array_header_1_0(member, max_header_size=MAX_HEADER_CHARS)
        except _UNREADABLE:
            return f"its {info.filename} cannot be read (damaged?); {_WRITTEN_BY}", ()
        header = member.tell()
    problem = _array_problem(shape, dtype, num_ws, w_dim) if key == KEY else _noise_problem(key, shape, dtype)
    if problem is None and header + math.prod(shape) * dtype.itemsize != info.file_size:
        problem = (
            f"its {limits.shown_name(key)} declares shape {limits.shown(list(shape))} of {dtype.str}, another size "
            f"than the {info.file_size - header:,} bytes it holds (truncated or altered?); {_WRITTEN_BY}"
        )
    return problem, shape


def _noise_problem(key: str, shape: tuple, dtype: np.dtype) -> str | None:
    if dtype.kind != "f" or dtype.itemsize not in FLOAT_SIZES or len(shape) != 3 or min(shape) < 1:
        return (
            f"its {limits.shown_name(key)} is no noise map (float [N, H, W]: dtype {dtype.str}, shape "
            f"{limits.shown(list(shape))}); {_WRITTEN_BY}"
        )
    return None


def _array_problem(shape: tuple, dtype: np.dtype, num_ws: int | None, w_dim: int | None) -> str | None:
    """A declared shape and dtype that are not float [N >= 1, num_ws, w_dim] within the limits, or the network's."""
    if dtype.kind != "f" or dtype.itemsize not in FLOAT_SIZES:
        return f"its {KEY} is of dtype {dtype.str}, not floating point; store it as float32 (w.astype(numpy.float32))"
    if len(shape) != 3 or min(shape) < 1:
        return f"its {KEY} has shape {limits.shown(list(shape))}, not [N, num_ws, w_dim] with N >= 1 (W+ latents)"
    _rows, found_ws, found_dim = shape
    if num_ws is not None and (found_ws, found_dim) != (num_ws, w_dim):
        return (
            f"holds ws of shape {limits.shown(list(shape))} (N x num_ws x w_dim), this network takes [N, {num_ws}, "
            f"{w_dim}]; project the image with this network, or use the network it was projected with"
        )
    if found_ws > MAX_NUM_WS or found_dim > limits.MAX_LATENT_DIM:
        return (
            f"its {KEY} has shape {limits.shown(list(shape))} (N x num_ws x w_dim); no network has more than "
            f"{MAX_NUM_WS} ws of {limits.MAX_LATENT_DIM}"
        )
    return None
