"""One entry for every network file ganforge reads, told apart by their first bytes (never by their names):

- a ganforge snapshot (`.safetensors`, `ganforge.snapshot`),
- an NVlabs network pickle (stylegan2-ada-pytorch, or stylegan3: StyleGAN2 networks and alias-free T and R
  generators), read as data,
- a TensorFlow-era NVlabs network pickle (stylegan2, stylegan2-ada in TensorFlow), read as data without TensorFlow,
- a released R3GAN network snapshot (brownvc/R3GAN: plain pickled torch modules), read as data,
- a rosinality stylegan2-pytorch checkpoint (`.pt`), read with `torch.load(weights_only=True)`.

Nothing from any of them is executed.
"""

import contextlib
import io
import pickletools
from pathlib import Path

import torch

from ganforge.digest import file_sha256
from ganforge.durable import WriteError, check_destination, write_problem
from ganforge.errors import UserError
from ganforge.interop import official, official_stylegan3, r3gan, rosinality, tf_stylegan2
from ganforge.interop.official_pickle import PersistentRecord, read_pickle
from ganforge.interop.options import WHICH
from ganforge.interop.r3gan_pickle import ModuleRecord, read_r3gan_pickle
from ganforge.interop.tf_pickle import network_of, read_tf_pickle
from ganforge.nets import Generator
from ganforge.outputs import check_writable_folder
from ganforge.snapshot import load_snapshot, save_discriminator, save_snapshot

SNAPSHOT, NVLABS, ROSINALITY = "ganforge snapshot", "NVlabs pickle", "rosinality checkpoint"
TENSORFLOW, R3GAN = "NVlabs TensorFlow pickle", "R3GAN pickle"
SUPPORTED = (
    "supported: a ganforge snapshot (.safetensors), an NVlabs network pickle (.pkl) of stylegan2-ada-pytorch, "
    "stylegan3, or TensorFlow stylegan2 / stylegan2-ada, a released R3GAN network snapshot (.pkl), a rosinality "
    "stylegan2-pytorch checkpoint (.pt)"
)
ZIP_MAGIC = b"PK\x03\x04"  # torch.save's format since PyTorch 1.6
LEGACY_TORCH_MAGIC = b"\x80\x02\x8a\x0a\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19"  # older torch.save: a pickled magic
PICKLE_PROTO = b"\x80"  # then the protocol number, 2 to 5
HEAD_BYTES = 256  # a network pickle names its first global within its first 64 bytes
TF_NETWORK_MODULE = "dnnlib.tflib.network"  # a TensorFlow-era file starts with its G, a Network of this module
R3GAN_MODULE = "training.networks"  # an R3GAN snapshot starts with its G, a plain module of this module
STRING_OPCODES = ("SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "UNICODE")


def file_kind(path: Path) -> str:
    """SNAPSHOT, NVLABS, TENSORFLOW, R3GAN or ROSINALITY from the first bytes; UserError saying what the file is
    otherwise."""
    if not path.is_file():
        raise UserError(f"{path}: no such file; {SUPPORTED}")
    try:
        with open(path, "rb") as file:
            head = file.read(HEAD_BYTES)
    except OSError as err:
        raise UserError(f"{path}: cannot be read ({err.strerror or type(err).__name__}); {SUPPORTED}") from None
    # safetensors: an 8-byte little-endian header length, then the JSON header; checked first, since the length's
    # low byte may be anything (0x80 too, a pickle's first byte)
    if len(head) > 8 and head[8:9] == b"{" and 8 + int.from_bytes(head[:8], "little") <= path.stat().st_size:
        return SNAPSHOT
    if head.startswith(ZIP_MAGIC) or head.startswith(LEGACY_TORCH_MAGIC):
        return ROSINALITY
    if head[:1] == PICKLE_PROTO and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return {TF_NETWORK_MODULE: TENSORFLOW, R3GAN_MODULE: R3GAN}.get(_first_global_module(head), NVLABS)
    what = "an empty file" if not head else "a PNG image" if head.startswith(b"\x89PNG") else "of unknown content"
    raise UserError(f"{path}: {what} (first bytes {head[:8].hex(' ')}); {SUPPORTED}")


def _first_global_module(head: bytes) -> str | None:
    """The module of the first global a pickle names, parsed (never run) from its first bytes; None if there is none
    within them. STACK_GLOBAL takes the module from the string pushed before the name."""
    strings = []
    try:
        for opcode, arg, _ in pickletools.genops(io.BytesIO(head)):
            if opcode.name == "GLOBAL":
                return arg.split(" ", 1)[0]
            if opcode.name == "STACK_GLOBAL":
                return strings[-2] if len(strings) >= 2 else None
            if opcode.name in STRING_OPCODES:
                strings.append(arg)
    except ValueError:  # the head ends inside an opcode, or is not a pickle past this point
        pass
    return None


def read_network(path, which: str = "G_ema") -> tuple[torch.nn.Module, dict]:
    """Network `which` (G_ema, G or D) of an NVlabs pickle (PyTorch or TensorFlow), an R3GAN pickle or a rosinality
    checkpoint, converted in memory (CPU, eval mode), with a meta dict saying where it came from and what was
    inferred."""
    path = Path(path)
    assert which in WHICH, which
    kind = file_kind(path)
    if kind == SNAPSHOT:
        raise UserError(f"{path}: already a ganforge snapshot; use it as it is")
    net, details = convert(path, kind, parse(path, kind), which)
    meta = {"imported_from": path.name, "source_format": kind, "source_sha256": sha256_of(path), "network": which}
    return net, {**meta, "details": details}


def parse(path: Path, kind: str):
    """A foreign file's content as its reader parses it, nothing run: the object graph of an NVlabs pickle (PyTorch
    or TensorFlow) or an R3GAN pickle, or a rosinality checkpoint's dict."""
    if kind == NVLABS:
        return read_pickle(path)
    if kind == R3GAN:
        return read_r3gan_pickle(path)
    if kind == TENSORFLOW:
        return read_tf_pickle(path)
    assert kind == ROSINALITY, kind
    return rosinality.read_checkpoint(path)


def holds(kind: str, parsed, which: str) -> bool:
    """Does the parsed file hold network `which` (a TensorFlow pickle always holds G, D and Gs, or is refused)?"""
    if kind == NVLABS:
        return isinstance(parsed, dict) and isinstance(parsed.get(which), PersistentRecord)
    if kind == TENSORFLOW:
        return True
    if kind == R3GAN:
        return isinstance(parsed, dict) and isinstance(parsed.get(which), ModuleRecord)
    return isinstance(parsed.get(rosinality.SOURCE_KEYS[which]), dict)


def convert(path: Path, kind: str, parsed, which: str) -> tuple[torch.nn.Module, dict]:
    """Network `which` of a parsed file as a ganforge network, and the architecture and details it was built from;
    a UserError naming what the file holds when it has no such network."""
    if kind == NVLABS:
        record = official.network_record(path, parsed, which)
        if which == "D":
            return official.read_discriminator(path, record)
        if official_stylegan3.is_stylegan3(record):
            return official_stylegan3.read_stylegan3(path, record, official.generator_kwargs(path, record))
        return official.read_generator(path, record)
    if kind == R3GAN:
        record = official.network_record(path, parsed, which, ModuleRecord, "an R3GAN network snapshot")
        return r3gan.read_discriminator(path, record) if which == "D" else r3gan.read_generator(path, record, which)
    if kind == TENSORFLOW:
        network = network_of(path, parsed, which)
        read = tf_stylegan2.read_tf_discriminator if which == "D" else tf_stylegan2.read_tf_generator
        return read(path, network)
    if which == "D":
        return rosinality.read_discriminator(path, parsed)
    return rosinality.read_generator(path, parsed, which)


def load_network_file(path, which: str = "G_ema", device="cpu") -> tuple[Generator, dict]:
    """A generator from a ganforge snapshot, an NVlabs pickle (PyTorch or TensorFlow), an R3GAN pickle or a
    rosinality checkpoint: (generator in eval mode on `device`, meta). `which` picks G_ema (default) or G in the
    foreign formats; a snapshot holds only G_ema."""
    path = Path(path)
    assert which in ("G_ema", "G"), which
    if file_kind(path) == SNAPSHOT:
        if which != "G_ema":
            raise UserError(f"{path}: a ganforge snapshot holds only G_ema")
        return load_snapshot(path, device)
    G, meta = read_network(path, which)
    return G.to(device), meta


def import_network(src, dest, which: str = "G_ema") -> dict:
    """Convert network `which` of `src` into a ganforge file at `dest` (a snapshot; a discriminator file for D),
    written atomically. Returns the meta stored with it. Where `dest` cannot be written is found out before `src`
    is read; a write that fails anyway (a full disk) leaves nothing behind, not even the folders made for it."""
    src, dest = Path(src), Path(dest)
    if dest.suffix != ".safetensors":
        raise UserError(f"DEST {dest}: name the output NAME.safetensors")
    check_destination(dest)
    check_writable_folder(dest.parent, "DEST")
    net, meta = read_network(src, which)
    made = [folder for folder in (dest.parent, *dest.parent.parents) if not folder.exists()]
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        (save_discriminator if which == "D" else save_snapshot)(dest, net, meta)
    except (OSError, WriteError) as err:  # nothing written: no folder made for it stays either
        for folder in made:  # innermost first
            with contextlib.suppress(OSError):
                folder.rmdir()
        if isinstance(err, WriteError):
            raise
        raise WriteError(write_problem(dest, err)) from None
    return meta


def sha256_of(path: Path) -> str:
    """The file's SHA-256; a UserError naming it when it cannot be read."""
    try:
        return file_sha256(path)
    except OSError as err:
        raise UserError(f"{path}: cannot be read ({err.strerror or type(err).__name__})") from None
