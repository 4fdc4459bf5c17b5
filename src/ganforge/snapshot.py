"""Snapshots: the shareable artifact of a run, one `.safetensors` file holding the EMA generator; and discriminator
files, the same format for a discriminator (written by `ganforge import --which D`, for fine-tuning).

File format (version 1): a safetensors file whose tensors are the network's `state_dict()` (float32, CPU layout; names
as in docs/official-tensor-mapping.md) and whose string metadata is

    format          "ganforge-snapshot" (generator) or "ganforge-discriminator"
    format_version  "1"
    architecture    "stylegan2" (nets.Generator / nets.Discriminator) or "stylegan3" (nets.StyleGAN3Generator); files
                    written before StyleGAN3 existed have no such field and are StyleGAN2
    generator       JSON of Generator.config (the constructor kwargs); "discriminator" in a discriminator file
    meta            JSON of a free-form dict from the writer (kimg, dataset, metrics, import source, ...)
    tensors_sha256  SHA-256 over (name, raw bytes) of every tensor in name order; checked on load when present,
                    since safetensors itself detects a truncated file but not flipped bytes

Loading never executes code from the file: it parses JSON, builds the network from the config and copies tensors.
"""

import dataclasses
import hashlib
import json
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open

from ganforge.durable import replace_file
from ganforge.errors import UserError
from ganforge.nets import Discriminator, Generator, StyleGAN3Generator
from ganforge.tensorfile import tensor_file_bytes

FORMAT = "ganforge-snapshot"
DISCRIMINATOR_FORMAT = "ganforge-discriminator"
FORMAT_VERSION = "1"


@dataclasses.dataclass(frozen=True)
class _Kind:
    """What distinguishes the two file kinds: names in messages, the format tag, the config key, the network class."""

    noun: str
    format: str
    config_key: str
    networks: dict[str, type]  # architecture name -> class
    fix: str  # where a user gets a good file of this kind


ARCHITECTURES = {"stylegan2": Generator, "stylegan3": StyleGAN3Generator}
_SNAPSHOT = _Kind("snapshot", FORMAT, "generator", ARCHITECTURES,
                  "pass a .safetensors file from a run's snapshots/ folder")  # fmt: skip
_DISCRIMINATOR = _Kind("discriminator", DISCRIMINATOR_FORMAT, "discriminator", {"stylegan2": Discriminator},
                       "pass a file written by `ganforge import --which D`")  # fmt: skip


def save_snapshot(path, G: Generator, meta: dict) -> None:
    """Write G's weights, architecture and `meta` (JSON-serialisable) to `path` atomically.

    The bytes go to a temporary file in the same folder, are fsynced, and the file is renamed over `path`, so a
    reader (or a crash) sees either the old snapshot or the complete new one, never a partial file. The same G and
    `meta` always give the same bytes.
    """
    _save(path, G, meta, _SNAPSHOT)


def save_discriminator(path, D: Discriminator, meta: dict) -> None:
    """Write D's weights, architecture and `meta` to `path` atomically, in the snapshot format."""
    _save(path, D, meta, _DISCRIMINATOR)


def architecture_of(net: torch.nn.Module) -> str:
    """The architecture family name a file records for a ganforge generator or discriminator."""
    names = [name for kind in (_SNAPSHOT, _DISCRIMINATOR) for name, cls in kind.networks.items() if type(net) is cls]
    assert names, f"not a ganforge network: {type(net).__name__}"
    return names[0]


def _save(path, net: torch.nn.Module, meta: dict, kind: _Kind) -> None:
    tensors = {k: v.detach().to("cpu", copy=True).contiguous() for k, v in net.state_dict().items()}
    metadata = {"format": kind.format, "format_version": FORMAT_VERSION, "architecture": architecture_of(net),
                kind.config_key: json.dumps(net.config), "meta": json.dumps(meta),
                "tensors_sha256": tensors_sha256(tensors)}  # fmt: skip
    replace_file(Path(path), tensor_file_bytes(tensors, metadata))


def tensors_sha256(tensors: dict) -> str:
    """Hex SHA-256 over each tensor's name and raw bytes, in name order."""
    h = hashlib.sha256()
    for name in sorted(tensors):
        h.update(name.encode())
        h.update(tensors[name].reshape(-1).contiguous().view(torch.uint8).numpy())  # 0-dim cannot view as bytes
    return h.hexdigest()


def load_snapshot(path, device="cpu") -> tuple[Generator, dict]:
    """Read a snapshot: (Generator in eval mode on `device`, meta dict). UserError when the file is unusable."""
    return _load(path, device, _SNAPSHOT)


def load_discriminator(path, device="cpu") -> tuple[Discriminator, dict]:
    """Read a discriminator file: (Discriminator in eval mode on `device`, meta dict)."""
    return _load(path, device, _DISCRIMINATOR)


def _load(path, device, kind: _Kind):
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such {kind.noun} file; {kind.fix}")
    metadata, tensors = _read(path, kind)
    if metadata.get("format") != kind.format:
        other = _DISCRIMINATOR if kind is _SNAPSHOT else _SNAPSHOT
        found = f"a ganforge {other.noun} file" if metadata.get("format") == other.format else "a safetensors file"
        raise UserError(f"{path}: {found} but not a ganforge {kind.noun} file (no '{kind.format}' metadata); "
                        f"{kind.fix}")  # fmt: skip
    if metadata.get("format_version") != FORMAT_VERSION:
        raise UserError(f"{path}: {kind.noun} format version {metadata.get('format_version')!r}, but this ganforge "
                        f"reads version {FORMAT_VERSION}; use the ganforge version that wrote it")  # fmt: skip
    try:
        config, meta = json.loads(metadata[kind.config_key]), json.loads(metadata["meta"])
    except (KeyError, json.JSONDecodeError) as err:
        raise UserError(f"{path}: {kind.noun} metadata is corrupt ({err!r}); copy the file again") from None
    if "tensors_sha256" in metadata and metadata["tensors_sha256"] != tensors_sha256(tensors):
        raise UserError(f"{path}: {kind.noun} tensors do not match their checksum, the file is corrupt; copy it again")
    net = _build(path, metadata.get("architecture", "stylegan2"), config, device, kind)
    check_tensors(path, net, tensors)
    net.load_state_dict(tensors)
    return net.eval(), meta


def file_format(path) -> str | None:
    """The `format` tag of a safetensors file (FORMAT, DISCRIMINATOR_FORMAT, ...), or None when it has none."""
    metadata, _ = _read(Path(path), _SNAPSHOT)
    return metadata.get("format")


def _read(path: Path, kind: _Kind) -> tuple[dict, dict]:
    """All metadata and tensors (CPU) of a safetensors file; UserError if it is not one or is damaged."""
    try:
        with safe_open(path, framework="pt", device="cpu") as f:
            return f.metadata() or {}, {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (safe_open has no iter)
    except SafetensorError as err:
        raise UserError(f"{path}: not a readable safetensors file ({err}); if it is a ganforge {kind.noun} it is "
                        "truncated or corrupt, copy it again") from None  # fmt: skip


def _build(path: Path, architecture: str, config, device, kind: _Kind) -> torch.nn.Module:
    """The network the file's config describes, on `device`; UserError if this ganforge cannot build it."""
    if architecture not in kind.networks:
        raise UserError(f"{path}: unknown {kind.config_key} architecture {architecture!r}; use the ganforge version "
                        "that wrote it")  # fmt: skip
    if not isinstance(config, dict):
        raise UserError(f"{path}: {kind.config_key} config is not a JSON object; copy the file again")
    try:
        with torch.device(device):
            return kind.networks[architecture](**config)
    except TypeError as err:
        raise UserError(f"{path}: architecture mismatch, this ganforge cannot build the file's "
                        f"{kind.config_key} ({err}); use the ganforge version that wrote it") from None  # fmt: skip
    except UserError as err:
        raise UserError(*(f"{path}: architecture mismatch, {kind.config_key} {p}" for p in err.problems)) from None


def check_tensors(where, net: torch.nn.Module, tensors: dict) -> None:
    """UserError listing every tensor of `net.state_dict()` missing from `tensors`, every unexpected one and every
    shape that differs, all at once; `where` (a file) prefixes each problem."""
    expected = {k: tuple(v.shape) for k, v in net.state_dict().items()}
    problems = [f"missing tensor {k}" for k in expected if k not in tensors]
    problems += [f"unexpected tensor {k}" for k in tensors if k not in expected]
    problems += [f"tensor {k} has shape {list(v.shape)}, the architecture needs {list(expected[k])}"
                 for k, v in tensors.items() if k in expected and tuple(v.shape) != expected[k]]  # fmt: skip
    if problems:
        raise UserError(*(f"{where}: architecture mismatch, {p}" for p in problems))
