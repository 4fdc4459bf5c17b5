"""Snapshots: the shareable artifact of a run, one `.safetensors` file holding the EMA generator.

File format (version 1): a safetensors file whose tensors are the generator's `state_dict()` (float32, CPU layout;
names as in docs/official-tensor-mapping.md) and whose string metadata is

    format          "ganforge-snapshot"
    format_version  "1"
    architecture    "stylegan2" (nets.Generator) or "stylegan3" (nets.StyleGAN3Generator); files written before
                    StyleGAN3 existed have no such field and are StyleGAN2
    generator       JSON of G.config (the constructor kwargs)
    meta            JSON of a free-form dict from the writer (kimg, dataset, metrics, ...)
    tensors_sha256  SHA-256 over (name, raw bytes) of every tensor in name order; checked on load when present,
                    since safetensors itself detects a truncated file but not flipped bytes

Loading never executes code from the file: it parses JSON, builds the generator from the config and copies tensors.
"""

import hashlib
import json
from pathlib import Path

import safetensors.torch
import torch
from safetensors import SafetensorError, safe_open

from ganforge.durable import replace_file
from ganforge.errors import UserError
from ganforge.nets import Generator, StyleGAN3Generator

FORMAT = "ganforge-snapshot"
FORMAT_VERSION = "1"
ARCHITECTURES = {"stylegan2": Generator, "stylegan3": StyleGAN3Generator}


def architecture_of(G: Generator | StyleGAN3Generator) -> str:
    """The architecture family name a snapshot records for G."""
    names = [name for name, cls in ARCHITECTURES.items() if type(G) is cls]
    assert names, f"not a ganforge generator: {type(G).__name__}"
    return names[0]


def save_snapshot(path, G: Generator | StyleGAN3Generator, meta: dict) -> None:
    """Write G's weights, architecture and `meta` (JSON-serialisable) to `path` atomically.

    The bytes go to a temporary file in the same folder, are fsynced, and the file is renamed over `path`, so a
    reader (or a crash) sees either the old snapshot or the complete new one, never a partial file.
    """
    path = Path(path)
    tensors = {k: v.detach().to("cpu", copy=True).contiguous() for k, v in G.state_dict().items()}
    metadata = {"format": FORMAT, "format_version": FORMAT_VERSION, "architecture": architecture_of(G),
                "generator": json.dumps(G.config), "meta": json.dumps(meta),
                "tensors_sha256": tensors_sha256(tensors)}  # fmt: skip
    data = safetensors.torch.save(tensors, metadata=metadata)
    replace_file(path, data)


def tensors_sha256(tensors: dict) -> str:
    """Hex SHA-256 over each tensor's name and raw bytes, in name order."""
    h = hashlib.sha256()
    for name in sorted(tensors):
        h.update(name.encode())
        h.update(tensors[name].reshape(-1).contiguous().view(torch.uint8).numpy())  # 0-dim cannot view as bytes
    return h.hexdigest()


def load_snapshot(path, device="cpu") -> tuple[Generator | StyleGAN3Generator, dict]:
    """Read a snapshot: (generator in eval mode on `device`, meta dict). UserError when the file is unusable."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path}: no such snapshot file; pass a .safetensors file from a run's snapshots/ folder")
    metadata, tensors = _read(path)
    if metadata.get("format") != FORMAT:
        raise UserError(f"{path}: a safetensors file but not a ganforge snapshot (no '{FORMAT}' metadata); "
                        "pass a file from a run's snapshots/ folder")  # fmt: skip
    if metadata.get("format_version") != FORMAT_VERSION:
        raise UserError(f"{path}: snapshot format version {metadata.get('format_version')!r}, but this ganforge "
                        f"reads version {FORMAT_VERSION}; use the ganforge version that wrote it")  # fmt: skip
    try:
        config, meta = json.loads(metadata["generator"]), json.loads(metadata["meta"])
    except (KeyError, json.JSONDecodeError) as err:
        raise UserError(f"{path}: snapshot metadata is corrupt ({err!r}); copy the file again") from None
    if "tensors_sha256" in metadata and metadata["tensors_sha256"] != tensors_sha256(tensors):
        raise UserError(f"{path}: snapshot tensors do not match their checksum, the file is corrupt; copy it again")
    G = _build(path, metadata.get("architecture", "stylegan2"), config, device)
    _check_tensors(path, G, tensors)
    G.load_state_dict(tensors)
    return G.eval(), meta


def _read(path: Path) -> tuple[dict, dict]:
    """All metadata and tensors (CPU) of a safetensors file; UserError if it is not one or is damaged."""
    try:
        with safe_open(path, framework="pt", device="cpu") as f:
            return f.metadata() or {}, {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (safe_open has no iter)
    except SafetensorError as err:
        raise UserError(f"{path}: not a readable safetensors file ({err}); if it is a ganforge snapshot it is "
                        "truncated or corrupt, copy it again") from None  # fmt: skip


def _build(path: Path, architecture: str, config, device) -> Generator | StyleGAN3Generator:
    """The generator the snapshot's config describes, on `device`; UserError if this ganforge cannot build it."""
    if architecture not in ARCHITECTURES:
        raise UserError(f"{path}: unknown generator architecture {architecture!r}; use the ganforge version that "
                        "wrote it")  # fmt: skip
    if not isinstance(config, dict):
        raise UserError(f"{path}: snapshot generator config is not a JSON object; copy the file again")
    try:
        with torch.device(device):
            return ARCHITECTURES[architecture](**config)
    except TypeError as err:
        raise UserError(f"{path}: architecture mismatch, this ganforge cannot build the snapshot's generator "
                        f"({err}); use the ganforge version that wrote it") from None  # fmt: skip
    except UserError as err:
        raise UserError(*(f"{path}: architecture mismatch, generator {p}" for p in err.problems)) from None


def _check_tensors(path: Path, G: torch.nn.Module, tensors: dict) -> None:
    """List every missing, unexpected or mis-shaped tensor at once."""
    expected = {k: tuple(v.shape) for k, v in G.state_dict().items()}
    problems = [f"missing tensor {k}" for k in expected if k not in tensors]
    problems += [f"unexpected tensor {k}" for k in tensors if k not in expected]
    problems += [f"tensor {k} has shape {list(v.shape)}, the architecture needs {list(expected[k])}"
                 for k, v in tensors.items() if k in expected and tuple(v.shape) != expected[k]]  # fmt: skip
    if problems:
        raise UserError(*(f"{path}: architecture mismatch, {p}" for p in problems))
