"""Checkpoint folders on disk: atomic commit, manifest verification, the `latest` pointer.

Layout of `<ckpt_dir>/ckpt-<nimg, 9+ digits>/`:
    tensors.safetensors   every tensor of the state (serialize.flatten)
    state.json            the rest of the state, with references to the tensors
    manifest.json         written last: format, format_version, name, nimg and {file: {"sha256", "size"}} for
                          the two files above
The bytes of all three depend only on the training state, so the same run repeated writes identical files (`md5sum`
equal); when a checkpoint was written is the manifest's modification time, which retention's `--keep-max-age` reads.
Version 1 manifests also held a `created` time, and the states of versions 1 and 2 also held Python's and NumPy's
generator states (checkpoint/rng.py); both still load. Version 4 added the writer's intra-op thread count
(`loop/intra_op_threads`), which older states lack.
`<ckpt_dir>/latest` names the newest committed folder, for people and tools; loading never trusts it and
scans the folders instead, so a crash between the rename and the pointer update loses nothing.
"""

import contextlib
import hashlib
import json
import os
import re
import shutil
import stat
import warnings
from pathlib import Path

import safetensors.torch
from safetensors import SafetensorError

from ganforge.checkpoint import serialize
from ganforge.durable import fsync_dir, write_file
from ganforge.tensorfile import tensor_file_bytes

FORMAT = "ganforge-checkpoint"
FORMAT_VERSION = 4
TENSORS = "tensors.safetensors"
STATE = "state.json"
MANIFEST = "manifest.json"
LATEST = "latest"
PREFIX = "ckpt-"
_TMP_PREFIXES = (".tmp-", ".trash-")
# ASCII digits only: str.isdigit() also takes "²", which int() refuses.
_CHECKPOINT_NAME = re.compile(re.escape(PREFIX) + "[0-9]{1,30}", re.ASCII)
MAX_NIMG = 2**53  # training progress in images; exact as a float, so kimg figures stay exact
# What the small files may hold, checked before they are read: a manifest is a few hundred bytes; state.json holds one
# short reference per tensor (a few thousand at 1024 px), the RNG states and the config, well under 1 MB. The cap
# bounds what parsing may allocate (8 MB of JSON makes at most a few hundred MB of Python objects).
MANIFEST_MAX_BYTES = 64 * 2**10
MAX_BYTES = {STATE: 8 * 2**20}


class CheckpointWarning(UserWarning):
    """A checkpoint was skipped because it does not verify, or a leftover could not be cleaned up."""


class InvalidCheckpoint(Exception):
    """A checkpoint folder that must not be loaded; `reason` says why in words a user can act on."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


def checkpoint_name(nimg: int) -> str:
    """Folder name for a checkpoint taken after `nimg` training images; zero-padded so names sort by progress."""
    assert nimg >= 0, nimg
    return f"{PREFIX}{nimg:09d}"


def list_checkpoints(ckpt_dir: Path) -> list[Path]:
    """Committed checkpoint folders (valid or not), oldest first; temporary folders are never listed."""
    ckpt_dir = Path(ckpt_dir)
    if not ckpt_dir.is_dir():
        return []
    found = [p for p in ckpt_dir.iterdir() if _CHECKPOINT_NAME.fullmatch(p.name)]
    return sorted(found, key=lambda p: int(p.name[len(PREFIX) :]))


def commit(ckpt_dir: Path, nimg: int, state) -> Path:
    """Write `state` as a new checkpoint folder atomically and point `latest` at it; return its path.

    Every file is fsynced, the manifest is written last, the folder is renamed into place and the parent fsynced,
    so after a crash at any moment the folder either does not exist or verifies. On any error the temporary
    folder is removed and the error propagates; earlier checkpoints are never touched.
    """
    skeleton, tensors = serialize.flatten(state)
    payloads = {
        TENSORS: tensor_file_bytes(tensors),
        STATE: json.dumps({"format": FORMAT, "state": skeleton}, allow_nan=False).encode("utf-8"),
    }
    ckpt_dir = Path(ckpt_dir)
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    remove_leftovers(ckpt_dir)
    name = checkpoint_name(nimg)
    tmp = ckpt_dir / f".tmp-{name}"
    try:
        tmp.mkdir()
        for file_name, data in payloads.items():
            write_file(tmp / file_name, data)
        write_file(tmp / MANIFEST, _manifest_bytes(name, nimg, payloads))
        fsync_dir(tmp)
        _move_into_place(tmp, ckpt_dir / name)
    except BaseException:
        _remove_tree(tmp)
        raise
    _update_latest(ckpt_dir, name)
    return ckpt_dir / name


def read_checkpoint(path: Path) -> tuple[dict, object]:
    """(manifest, state) of the checkpoint folder `path`, every file checked against the manifest (size before
    anything is read, then SHA-256) and parsed as safetensors and JSON only; raise InvalidCheckpoint."""
    path = Path(path)
    manifest, contents = _read_verified(path)
    try:
        tensors = safetensors.torch.load(contents[TENSORS])
    except SafetensorError as error:
        raise InvalidCheckpoint(f"{TENSORS} is not a safetensors file ({str(error)[:200]})") from None
    try:
        document = parse_json(contents[STATE])
        if not isinstance(document, dict) or document.get("format") != FORMAT or "state" not in document:
            raise ValueError(f"not an object with format {FORMAT!r} and a state")
        return manifest, serialize.unflatten(document["state"], tensors)
    except (ValueError, RecursionError) as error:
        raise InvalidCheckpoint(f"{STATE} is not a ganforge state document ({_error_text(error)})") from None


def parse_json(data: bytes):
    """Strict JSON (UTF-8, no NaN or Infinity: the writers never produce them); ValueError or RecursionError."""
    return json.loads(data.decode("utf-8"), parse_constant=_refuse_constant)


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _error_text(error: Exception) -> str:
    # A RecursionError's text says nothing about the file; our parsers' messages are bounded (no echoed content).
    what = "nested too deeply" if isinstance(error, RecursionError) else str(error).split(";")[0][:200]
    return f"{type(error).__name__}: {what}"


def read_manifest(path: Path) -> dict:
    """Parse and check `path/manifest.json` without hashing the files; raise InvalidCheckpoint."""
    missing = f"no {MANIFEST} (the write never finished, or the file was removed)"
    with _open_regular(Path(path) / MANIFEST, missing) as (file, size):
        if size > MANIFEST_MAX_BYTES:
            raise InvalidCheckpoint(f"{MANIFEST} has {size} bytes, more than a manifest holds ({MANIFEST_MAX_BYTES})")
        data = file.read(MANIFEST_MAX_BYTES)
    try:
        manifest = parse_json(data)
    except (ValueError, RecursionError) as error:
        raise InvalidCheckpoint(f"{MANIFEST} is not a valid manifest ({_error_text(error)})") from None
    problem = _manifest_problem(manifest)
    if problem is not None:
        raise InvalidCheckpoint(problem)
    return manifest


def _manifest_problem(manifest) -> str | None:
    """What is wrong with a parsed manifest, or None."""
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        what = serialize.describe(manifest.get("format") if isinstance(manifest, dict) else manifest)
        return f"{MANIFEST} is not a ganforge checkpoint manifest (format {what})"
    version = manifest.get("format_version")
    if not _whole(version, 1, 2**31):
        return f"{MANIFEST} is not a valid manifest (format_version {serialize.describe(version)})"
    if version > FORMAT_VERSION:
        return f"format version {version} is newer than this ganforge reads ({FORMAT_VERSION}); upgrade ganforge"
    files = manifest.get("files")
    well_formed = (
        _whole(manifest.get("nimg"), 0, MAX_NIMG)
        and isinstance(files, dict)
        and set(files) == {TENSORS, STATE}
        and all(
            isinstance(e, dict) and _is_sha256(e.get("sha256")) and _whole(e.get("size"), 0, 2**63)
            for e in files.values()
        )
    )
    if not well_formed:
        return (
            f"{MANIFEST} is not a valid manifest: it must hold an int nimg and exactly {TENSORS} and {STATE} with "
            "their sha256 and size"
        )
    return None


def _whole(value, low: int, high: int) -> bool:
    return type(value) is int and low <= value < high


def _is_sha256(value) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def written_at(path: Path) -> float:
    """When the checkpoint folder `path` was committed (unix seconds): its manifest, the last file written."""
    return (Path(path) / MANIFEST).stat().st_mtime


def _read_verified(path: Path) -> tuple[dict, dict[str, bytes]]:
    if not path.is_dir():
        raise InvalidCheckpoint("not a checkpoint folder")
    manifest = read_manifest(path)
    files = manifest["files"]
    # Anything the writer did not put there (a dropped-in .pkl or .pt, say) makes the folder untrustworthy.
    unexpected = sorted(p.name for p in path.iterdir() if p.name != MANIFEST and p.name not in files)
    if unexpected:
        shown = ", ".join(name if len(name) <= 40 else f"{name[:37]}..." for name in unexpected[:3])
        more = f" and {len(unexpected) - 3} more" if len(unexpected) > 3 else ""
        raise InvalidCheckpoint(f"files not in the manifest: {shown}{more}")
    contents = {}
    for file_name, entry in files.items():
        data = _read_sized(path / file_name, entry["size"], MAX_BYTES.get(file_name))
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise InvalidCheckpoint(f"{file_name} does not match its SHA-256 in the manifest (corrupted)")
        contents[file_name] = data
    return manifest, contents


def _read_sized(file_path: Path, size: int, cap: int | None) -> bytes:
    """The bytes of a file the manifest says has `size` bytes: its size compared first, so that a file of another
    size (or one larger than what it may hold) is refused without reading it."""
    name = file_path.name
    if cap is not None and size > cap:
        raise InvalidCheckpoint(f"{name}: the manifest gives it {size} bytes, more than it may hold ({cap})")
    with _open_regular(file_path, f"{name} is missing") as (file, found):
        if found != size:
            raise InvalidCheckpoint(_size_problem(name, found, size))
        data = file.read(size + 1)  # one byte more tells that it grew since it was measured
    if len(data) != size:
        raise InvalidCheckpoint(_size_problem(name, len(data), size))
    return data


def _size_problem(name: str, found: int, size: int) -> str:
    why = "truncated?" if found < size else "more was written to it?"
    return f"{name} has {found} bytes, the manifest says {size} ({why})"


@contextlib.contextmanager
def _open_regular(file_path: Path, missing: str):
    """(the open file, its size); InvalidCheckpoint(`missing`) when there is none, or when it is not a regular file.
    Opened without blocking and checked on the open descriptor, so that a FIFO or a device in its place (or put
    there after a check) can neither stall the reader nor feed it without end."""
    try:
        fd = os.open(file_path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise InvalidCheckpoint(missing) from None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InvalidCheckpoint(f"{file_path.name} is not a regular file")
        yield file, info.st_size


def _manifest_bytes(name: str, nimg: int, payloads: dict[str, bytes]) -> bytes:
    files = {file: {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data)} for file, data in payloads.items()}
    manifest = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "name": name,
        "nimg": nimg,
        "files": files,
    }
    return json.dumps(manifest, indent=2).encode("utf-8")


def remove_leftovers(ckpt_dir: Path) -> None:
    """Delete temporary folders left by a write that was killed; only the one writer (rank 0) calls this. These names
    are the writer's own, so whatever else holds one (a file, a link) would only block the next write: it goes too."""
    for path in ckpt_dir.iterdir():
        if path.name.startswith(_TMP_PREFIXES):
            _remove_tree(path)


def _move_into_place(tmp: Path, final: Path) -> None:
    # A folder of the same name exists only when training resumed from an older checkpoint because this one
    # did not verify; move it aside first, since rename cannot replace a non-empty folder.
    trash = final.with_name(f".trash-{final.name}")
    if final.exists():
        os.rename(final, trash)
    os.rename(tmp, final)
    fsync_dir(final.parent)
    _remove_tree(trash)


def _update_latest(ckpt_dir: Path, name: str) -> None:
    # The pointer is a convenience; failing to update it must not turn a committed checkpoint into an error.
    tmp = ckpt_dir / f".{LATEST}.tmp"
    try:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        write_file(tmp, f"{name}\n".encode())
        os.replace(tmp, ckpt_dir / LATEST)
        fsync_dir(ckpt_dir)
    except OSError as error:
        warnings.warn(
            f"checkpoint {ckpt_dir / name} committed, but {ckpt_dir / LATEST} was not updated: {error}",
            CheckpointWarning,
            stacklevel=3,
        )


def _remove_tree(path: Path) -> None:
    if not (path.exists() or path.is_symlink()):
        return
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    except OSError as error:
        warnings.warn(f"could not remove {path}: {error}", CheckpointWarning, stacklevel=3)
