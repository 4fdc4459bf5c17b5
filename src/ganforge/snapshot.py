"""Snapshots: the shareable artifact of a run, one `.safetensors` file holding the EMA generator; and discriminator
files, the same format for a discriminator (written by `ganforge import --which D`, for fine-tuning).

File format (version 1): a safetensors file whose tensors are the network's `state_dict()` (float32, CPU layout; names
as in docs/official-tensor-mapping.md) and whose string metadata is

    format          "ganforge-snapshot" (generator) or "ganforge-discriminator"
    format_version  "1"
    architecture    "stylegan2" (nets.Generator / nets.Discriminator), "stylegan3" (nets.StyleGAN3Generator) or "r3gan"
                    (nets.R3GANGenerator / nets.R3GANDiscriminator); files written before StyleGAN3 existed have no
                    such field and are StyleGAN2
    generator       JSON of Generator.config (the constructor kwargs); "discriminator" in a discriminator file
    meta            JSON of a free-form dict from the writer (kimg, dataset, metrics, import source, ...)
    tensors_sha256  SHA-256 over (name, raw bytes) of every tensor in name order (read by older ganforge versions)
    content_sha256  SHA-256 over every tensor (name, dtype, shape, raw bytes) in name order, then every other metadata
                    field (canonical JSON): what the file says it is, as much as what it holds

A file is checked against content_sha256. Files from before it existed still load, each with a warning naming
what is unchecked: with only tensors_sha256 (written for about a day; removing content_sha256 from a current file
gives the same, so such a file's architecture and meta may have been altered), or, for the very first snapshots,
with no checksum at all (exactly the fields format, format_version, generator and meta). Any other file without
content_sha256 is refused: its content cannot be verified. safetensors itself detects a truncated file, not flipped
bytes. A checksum is not a signature: it proves a file intact, not who wrote it.

Loading never executes code from the file: it parses JSON, checks the architecture against ganforge.limits, builds
the network on the meta device to compare its tensors with the file's, then builds it and copies tensors.
"""

import dataclasses
import hashlib
import inspect
import json
import warnings
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open

from ganforge.durable import replace_file
from ganforge.errors import UserError
from ganforge.limits import MIN_PARAMETER_BYTES, architecture_problems, shown, shown_name
from ganforge.nets import Discriminator, Generator, R3GANDiscriminator, R3GANGenerator, StyleGAN3Generator
from ganforge.tensorfile import tensor_file_bytes

FORMAT = "ganforge-snapshot"
DISCRIMINATOR_FORMAT = "ganforge-discriminator"
FORMAT_VERSION = "1"
CONTENT_HASH, TENSORS_HASH = "content_sha256", "tensors_sha256"
# The fields of the first snapshots, written before snapshots carried any checksum.
UNCHECKED_FIELDS = {"format", "format_version", "generator", "meta"}
MAX_JSON_CHARS = 1 << 20  # a config or meta field; ganforge writes a few hundred characters
MAX_JSON_DEPTH = 32  # nesting of meta (ganforge writes 3 levels)
MAX_TENSORS = 10_000  # a 1024x1024 StyleGAN3 generator has about 400
MAX_LISTED = 10  # problems listed one per line; the rest are counted
TENSOR_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


@dataclasses.dataclass(frozen=True)
class _Kind:
    """What distinguishes the two file kinds: names in messages, the format tag, the config key, the network class."""

    noun: str
    format: str
    config_key: str
    networks: dict[str, type]  # architecture name -> class
    fix: str  # where a user gets a good file of this kind


ARCHITECTURES = {"stylegan2": Generator, "stylegan3": StyleGAN3Generator, "r3gan": R3GANGenerator}
_SNAPSHOT = _Kind(
    "snapshot", FORMAT, "generator", ARCHITECTURES, "pass a .safetensors file from a run's snapshots/ folder"
)
_DISCRIMINATOR = _Kind(
    "discriminator",
    DISCRIMINATOR_FORMAT,
    "discriminator",
    {"stylegan2": Discriminator, "r3gan": R3GANDiscriminator},
    "pass a file written by `ganforge import --which D`",
)


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
    metadata = {
        "format": kind.format,
        "format_version": FORMAT_VERSION,
        "architecture": architecture_of(net),
        kind.config_key: json.dumps(net.config),
        "meta": json.dumps(meta),
        TENSORS_HASH: tensors_sha256(tensors),
    }
    metadata[CONTENT_HASH] = content_sha256(metadata, tensors)
    replace_file(Path(path), tensor_file_bytes(tensors, metadata))


def tensors_sha256(tensors: dict) -> str:
    """Hex SHA-256 over each tensor's name and raw bytes, in name order."""
    h = hashlib.sha256()
    for name in sorted(tensors):
        h.update(name.encode())
        h.update(_raw(tensors[name]))
    return h.hexdigest()


def content_sha256(metadata: dict, tensors: dict) -> str:
    """Hex SHA-256 over each tensor's name, dtype, shape and raw bytes in name order, then the canonical JSON of
    every metadata field but CONTENT_HASH itself. Each tensor's description fixes the length of its bytes, so the
    stream has one reading."""
    h = hashlib.sha256()
    for name in sorted(tensors):
        value = tensors[name]
        h.update(json.dumps([name, str(value.dtype), list(value.shape)]).encode())
        h.update(_raw(value))
    fields = {k: v for k, v in metadata.items() if k != CONTENT_HASH}
    h.update(json.dumps(fields, sort_keys=True, ensure_ascii=True).encode())
    return h.hexdigest()


def _raw(tensor: torch.Tensor):
    return tensor.reshape(-1).contiguous().view(torch.uint8).numpy()  # 0-dim cannot view as bytes


def load_snapshot(path, device="cpu") -> tuple[Generator, dict]:
    """Read a snapshot: (Generator in eval mode on `device`, meta dict). UserError when the file is unusable."""
    return _load(path, device, _SNAPSHOT)


def load_discriminator(path, device="cpu") -> tuple[Discriminator, dict]:
    """Read a discriminator file: (Discriminator in eval mode on `device`, meta dict)."""
    return _load(path, device, _DISCRIMINATOR)


def check_weights_file(path) -> str:
    """Everything loading `path` (a snapshot or a discriminator file, told apart by its format tag) checks: format,
    checksum, metadata, architecture, tensors; without building the network. Returns the format tag. A command that
    will load the file later calls it before writing anything, so that a bad file leaves nothing behind."""
    return read_weights_file(path)["format"]


def read_weights_file(path) -> dict:
    """What a snapshot or discriminator file holds, once it passed every check loading makes (`check_weights_file`),
    without building the network: {"format", "architecture", "generator" or "discriminator" (the constructor
    arguments), "meta", "tensors"} (the checksums, which only restate the rest, are left out)."""
    if not Path(path).is_file():
        raise UserError(f"{path}: no such file; pass a ganforge snapshot or discriminator file")
    kind = _DISCRIMINATOR if file_format(path) == DISCRIMINATOR_FORMAT else _SNAPSHOT
    network, config, tensors, meta = _checked_parts(Path(path), kind)
    check_network(path, network, config, tensors, Path(path).stat().st_size)
    architecture = next(name for name, cls in kind.networks.items() if cls is network)
    described = {"format": kind.format, "architecture": architecture, kind.config_key: config, "meta": meta}
    return described | {"tensors": tensors}


def _load(path, device, kind: _Kind):
    network, config, tensors, meta = _checked_parts(Path(path), kind)
    net = build_network(path, network, config, tensors, device, Path(path).stat().st_size)
    if kind is _SNAPSHOT:
        net.label_space = label_space(meta, net.c_dim)
    return net, meta


LABEL_KINDS = ("classes", "vectors")
MAX_LABEL_NAME = 64  # characters of one label's name that are kept


def label_space(meta: dict, c_dim: int) -> dict | None:
    """What a conditional generator's label inputs mean, as the run that trained it recorded them in its snapshots'
    meta: {"kind": "classes" or "vectors", "names": one name per input}. None where nothing (well-formed) is
    recorded: a file of another make, whose labels are read as classes, as NVlabs' conditional networks' are."""
    space = meta.get("labels")
    if not (isinstance(space, dict) and space.get("kind") in LABEL_KINDS and isinstance(space.get("names"), list)):
        return None
    names = space["names"]
    if c_dim == 0 or len(names) != c_dim or not all(isinstance(name, str) for name in names):
        return None
    return {"kind": space["kind"], "names": [name[:MAX_LABEL_NAME] for name in names]}


def _checked_parts(path: Path, kind: _Kind) -> tuple[type, dict, dict, dict]:
    """(network class, its constructor arguments as the file states them, tensors, meta) of a verified file."""
    if not path.is_file():
        raise UserError(f"{path}: no such {kind.noun} file; {kind.fix}")
    metadata, tensors = _read(path, kind)
    if metadata.get("format") != kind.format:
        other = _DISCRIMINATOR if kind is _SNAPSHOT else _SNAPSHOT
        found = f"a ganforge {other.noun} file" if metadata.get("format") == other.format else "a safetensors file"
        raise UserError(
            f"{path}: {found} but not a ganforge {kind.noun} file (no '{kind.format}' metadata); {kind.fix}"
        )
    if metadata.get("format_version") != FORMAT_VERSION:
        raise UserError(
            f"{path}: {kind.noun} format version {shown(metadata.get('format_version'))}, but this "
            f"ganforge reads version {FORMAT_VERSION}; use the ganforge version that wrote it"
        )
    _verify(path, metadata, tensors, kind)
    config, meta = (_json(path, metadata, key, kind) for key in (kind.config_key, "meta"))
    if not isinstance(meta, dict):
        raise UserError(f"{path}: {kind.noun} metadata 'meta' is {shown(meta)}, not a JSON object; copy the file again")
    architecture = metadata.get("architecture", "stylegan2")
    if architecture not in kind.networks:
        raise UserError(
            f"{path}: unknown {kind.config_key} architecture {shown(architecture)}; use the ganforge "
            "version that wrote it"
        )
    return kind.networks[architecture], config, tensors, meta


def _verify(path: Path, metadata: dict, tensors: dict, kind: _Kind) -> None:
    """UserError unless the file's checksum matches what it holds. A ganforge format from before the checksum
    covered the metadata (tensors_sha256 only), or from before snapshots had checksums, loads with a warning."""
    if CONTENT_HASH in metadata:
        ok = metadata[CONTENT_HASH] == content_sha256(metadata, tensors)
    elif TENSORS_HASH in metadata:  # the tensors are covered, the metadata not: the file cannot vouch for it
        ok = metadata[TENSORS_HASH] == tensors_sha256(tensors)
        if ok:
            warnings.warn(
                f"{path}: its architecture and meta are not covered by a checksum ({TENSORS_HASH} without "
                f"{CONTENT_HASH}: a ganforge {kind.noun} from before {CONTENT_HASH}, or a current one with it "
                "removed), so they may have been altered; for a fully checked file copy the original again or, "
                "if it was imported, run `ganforge import` on its source again",
                stacklevel=3,
            )
    elif kind is _SNAPSHOT and set(metadata) == UNCHECKED_FIELDS:  # the first snapshots, before any checksum
        warnings.warn(
            f"{path}: written before snapshots carried a checksum, so its integrity cannot be checked", stacklevel=3
        )
        return
    else:
        raise UserError(
            f"{path}: {kind.noun} without a checksum ({CONTENT_HASH}): every {kind.noun} ganforge "
            "writes has one, so this file was altered and its content cannot be verified; copy the "
            "original again"
        )
    if not ok:
        raise UserError(f"{path}: {kind.noun} content does not match its checksum, the file is corrupt; copy it again")


def _json(path: Path, metadata: dict, key: str, kind: _Kind):
    """The JSON value of metadata field `key`, nested at most MAX_JSON_DEPTH deep; UserError if absent or bad."""
    text = metadata.get(key)
    problem = None
    if text is None:
        problem = f"no '{key}' field"
    elif len(text) > MAX_JSON_CHARS:
        problem = f"'{key}' is {len(text)} characters long (at most {MAX_JSON_CHARS})"
    else:
        try:
            value = json.loads(text)
        except json.JSONDecodeError as err:
            problem = f"'{key}' is not JSON ({err.msg}, character {err.pos})"
        except RecursionError:  # the C scanner recurses once per nesting level
            problem = f"'{key}' is nested too deeply"
        else:
            if _depth(value) > MAX_JSON_DEPTH:
                problem = f"'{key}' is nested more than {MAX_JSON_DEPTH} levels deep"
    if problem is not None:
        raise UserError(f"{path}: {kind.noun} metadata is corrupt: {problem}; copy the file again")
    return value


def _depth(value) -> int:
    """Nesting depth of a parsed JSON value (a tree: JSON has no shared parts), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth <= MAX_JSON_DEPTH and isinstance(item, (dict, list)):
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def file_format(path) -> str | None:
    """The `format` tag of a safetensors file (FORMAT, DISCRIMINATOR_FORMAT, ...), or None when it has none. Reads
    the header only."""
    try:
        with safe_open(Path(path), framework="pt", device="cpu") as f:
            return (f.metadata() or {}).get("format")
    except (SafetensorError, OSError) as err:
        raise UserError(
            f"{path}: not a readable safetensors file ({shown(str(err))}); pass a ganforge snapshot or "
            "discriminator file"
        ) from None


def _read(path: Path, kind: _Kind) -> tuple[dict, dict]:
    """All metadata and tensors (CPU) of a safetensors file; UserError if it is not one or is damaged."""
    try:
        with safe_open(path, framework="pt", device="cpu") as f:
            names = list(f.keys())
            if len(names) > MAX_TENSORS:
                raise UserError(
                    f"{path}: holds {len(names)} tensors, more than any network ganforge reads "
                    f"({MAX_TENSORS}); {kind.fix}"
                )
            return f.metadata() or {}, {k: f.get_tensor(k) for k in names}
    except (SafetensorError, OSError) as err:
        raise UserError(
            f"{path}: not a readable safetensors file ({shown(str(err))}); if it is a ganforge "
            f"{kind.noun} it is truncated or corrupt, copy it again"
        ) from None


# --- networks from untrusted architectures and tensors ---------------------------------------------------------------


def check_architecture(where, network: type, arch) -> None:
    """UserError listing every problem of `arch` as constructor arguments of `network`: a name the constructor does
    not take, a value out of ganforge.limits. Types and arithmetic only, before anything is built."""
    if not isinstance(arch, dict):
        raise UserError(f"{where}: the architecture is {shown(arch)}, not a JSON object of constructor arguments")
    takes = [p.name for p in inspect.signature(network).parameters.values() if p.kind is p.POSITIONAL_OR_KEYWORD]
    problems = [f"{shown_name(name)}: not an argument of {network.__name__}" for name in arch if name not in takes]
    problems += architecture_problems({k: v for k, v in arch.items() if k in takes})
    if problems:
        raise UserError(*listed(f"{where}: unsupported architecture, ", problems))


def construct(where, network: type, arch: dict, device=None) -> torch.nn.Module:
    """`network(**arch)` on `device` ("meta" for shapes only) once `arch` is within the limits; an invalid one is
    a UserError naming `where`."""
    check_architecture(where, network, arch)
    try:
        with torch.device(device or "cpu"):
            return network(**arch)
    except UserError as err:
        raise UserError(*listed(f"{where}: unsupported architecture, ", err.problems)) from None


def sized_network(where, network: type, arch: dict, file_bytes: int) -> torch.nn.Module:
    """`network(**arch)` on the meta device (shapes only), once `arch` is within the limits and its parameter count
    within what a file of `file_bytes` can hold."""
    shapes_only = construct(where, network, arch, "meta")
    count = sum(v.numel() for v in shapes_only.state_dict().values())
    if count * MIN_PARAMETER_BYTES > file_bytes:
        raise UserError(
            f"{where}: its architecture has {count:,} parameters, more than a file of {file_bytes:,} "
            "bytes can hold; the file is truncated or its architecture was altered"
        )
    return shapes_only


def check_network(where, network: type, arch: dict, tensors: dict, file_bytes: int) -> torch.nn.Module:
    """`sized_network`, its tensors compared with `tensors`: everything but allocating."""
    shapes_only = sized_network(where, network, arch, file_bytes)
    check_tensors(where, shapes_only, tensors)
    return shapes_only


def build_network(where, network: type, arch: dict, tensors: dict, device, file_bytes: int) -> torch.nn.Module:
    """`network(**arch)` on `device` in eval mode holding `tensors` (as float32), built only once `check_network`
    found the file holds exactly that network, so that nothing is allocated for a network the file does not hold."""
    check_network(where, network, arch, tensors, file_bytes)
    net = construct(where, network, arch, device)
    net.load_state_dict({name: value.to(torch.float32) for name, value in tensors.items()})
    return net.eval()


def check_tensors(where, net: torch.nn.Module, tensors: dict) -> None:
    """UserError listing every tensor of `net.state_dict()` missing from `tensors`, every unexpected one, every shape
    that differs and every value that is not a finite floating-point tensor; `where` (a file) prefixes each."""
    expected = {k: tuple(v.shape) for k, v in net.state_dict().items()}
    problems = [f"missing tensor {k}" for k in expected if k not in tensors]
    problems += [f"unexpected tensor {shown_name(k)}" for k in tensors if k not in expected]
    problems += [
        f"{k} is {_kind(v)}, not a tensor of floating-point numbers"
        for k, v in tensors.items()
        if k in expected and not _plain_float(v)
    ]
    problems += [
        f"tensor {k} has shape {shown(list(v.shape))}, the architecture needs {list(expected[k])}"
        for k, v in tensors.items()
        if k in expected and _plain_float(v) and tuple(v.shape) != expected[k]
    ]
    if problems:
        raise UserError(*listed(f"{where}: architecture mismatch, ", problems))
    damaged = [k for k, v in tensors.items() if not torch.isfinite(v).all()]
    if damaged:
        names = ", ".join(damaged[:3]) + (f" and {len(damaged) - 3} more" if len(damaged) > 3 else "")
        raise UserError(
            f"{where}: damaged weights, {len(damaged)} tensors hold NaN or infinite values ({names}); "
            "a network with them makes no images"
        )


def _plain_float(value) -> bool:
    return isinstance(value, torch.Tensor) and value.layout == torch.strided and value.dtype in TENSOR_DTYPES


def _kind(value) -> str:
    return f"a {value.dtype} {value.layout} tensor" if isinstance(value, torch.Tensor) else f"a {type(value).__name__}"


def listed(prefix: str, problems: list[str], where: str = "") -> list[str]:
    """At most MAX_LISTED problems, each with `prefix`, and a line counting the rest (which starts with `where`, or
    `prefix`): a file can hold any number of mistakes, a terminal shows a few."""
    lines = [prefix + p for p in problems[:MAX_LISTED]]
    if len(problems) > MAX_LISTED:
        lines.append(f"{where or prefix}and {len(problems) - MAX_LISTED} more problems")
    return lines
