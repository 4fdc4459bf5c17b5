"""Checkpoint folders on disk: atomic commit, manifest verification, the `latest` pointer.

Layout of `<ckpt_dir>/ckpt-<nimg, 9+ digits>/`:
    tensors.safetensors   every tensor of the state (serialize.flatten)
    state.json            the rest of the state, with references to the tensors
    manifest.json         written last: format, format_version, name, nimg and {file: {"sha256", "size"}} for
                          the two files above
The bytes of all three depend only on the training state, so the same run repeated writes identical files (`md5sum`
equal); when a checkpoint was written is the manifest's modification time, which retention's `--keep-max-age` reads.
Version 1 manifests also held a `created` time; they still load.
`<ckpt_dir>/latest` names the newest committed folder, for people and tools; loading never trusts it and
scans the folders instead, so a crash between the rename and the pointer update loses nothing.
"""

import contextlib
import hashlib
import json
import os
import shutil
import warnings
from pathlib import Path

import safetensors.torch
from safetensors import SafetensorError

from ganforge.checkpoint import serialize
from ganforge.durable import fsync_dir, write_file
from ganforge.tensorfile import tensor_file_bytes

FORMAT = "ganforge-checkpoint"
FORMAT_VERSION = 2
TENSORS = "tensors.safetensors"
STATE = "state.json"
MANIFEST = "manifest.json"
LATEST = "latest"
PREFIX = "ckpt-"
_TMP_PREFIXES = (".tmp-", ".trash-")


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
    found = [p for p in ckpt_dir.iterdir() if p.name.startswith(PREFIX) and p.name[len(PREFIX) :].isdigit()]
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


def read(path: Path):
    """Verify the checkpoint folder `path` against its manifest and return the state; raise InvalidCheckpoint."""
    contents = _read_verified(Path(path))
    try:
        tensors = safetensors.torch.load(contents[TENSORS])
    except SafetensorError as error:
        raise InvalidCheckpoint(f"{TENSORS} is not a safetensors file ({error})") from None
    try:
        document = json.loads(contents[STATE].decode("utf-8"))
        if document["format"] != FORMAT:
            raise ValueError(f"format is {document['format']!r}")
        return serialize.unflatten(document["state"], tensors)
    except (ValueError, KeyError, TypeError, RecursionError) as error:
        raise InvalidCheckpoint(f"{STATE} is not a ganforge state document ({type(error).__name__}: {error})") from None


def read_manifest(path: Path) -> dict:
    """Parse and check `path/manifest.json` without hashing the files; raise InvalidCheckpoint."""
    manifest_path = Path(path) / MANIFEST
    if not manifest_path.is_file():
        raise InvalidCheckpoint(f"no {MANIFEST} (the write never finished, or the file was removed)")
    try:
        manifest = json.loads(manifest_path.read_bytes().decode("utf-8"))
        fmt, version, files = manifest["format"], manifest["format_version"], manifest["files"]
        well_formed = (
            isinstance(version, int)
            and type(manifest["nimg"]) is int
            and set(files) == {TENSORS, STATE}
            and all(isinstance(e["sha256"], str) and type(e["size"]) is int for e in files.values())
        )
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as error:
        raise InvalidCheckpoint(f"{MANIFEST} is not a valid manifest ({type(error).__name__}: {error})") from None
    if fmt != FORMAT:
        raise InvalidCheckpoint(f"{MANIFEST} is not a ganforge checkpoint manifest (format {fmt!r})")
    if isinstance(version, int) and version > FORMAT_VERSION:
        raise InvalidCheckpoint(
            f"format version {version} is newer than this ganforge reads ({FORMAT_VERSION}); upgrade ganforge"
        )
    if not well_formed:
        raise InvalidCheckpoint(
            f"{MANIFEST} must hold an int nimg and exactly {TENSORS} and {STATE} with their sha256 and size"
        )
    return manifest


def written_at(path: Path) -> float:
    """When the checkpoint folder `path` was committed (unix seconds): its manifest, the last file written."""
    return (Path(path) / MANIFEST).stat().st_mtime


def _read_verified(path: Path) -> dict[str, bytes]:
    if not path.is_dir():
        raise InvalidCheckpoint("not a checkpoint folder")
    manifest = read_manifest(path)
    files = manifest["files"]
    # Anything the writer did not put there (a dropped-in .pkl or .pt, say) makes the folder untrustworthy.
    unexpected = sorted(p.name for p in path.iterdir() if p.name != MANIFEST and p.name not in files)
    if unexpected:
        raise InvalidCheckpoint(f"files not in the manifest: {', '.join(unexpected)}")
    contents = {}
    for file_name, entry in files.items():
        file_path = path / file_name
        if not file_path.is_file():
            raise InvalidCheckpoint(f"{file_name} is missing")
        data = file_path.read_bytes()
        if len(data) != entry["size"]:
            size = entry["size"]
            raise InvalidCheckpoint(f"{file_name} has {len(data)} bytes, the manifest says {size} (truncated?)")
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise InvalidCheckpoint(f"{file_name} does not match its SHA-256 in the manifest (corrupted)")
        contents[file_name] = data
    return contents


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
    """Delete temporary folders left by a write that was killed; only the one writer (rank 0) calls this."""
    for path in ckpt_dir.iterdir():
        if path.name.startswith(_TMP_PREFIXES) and path.is_dir():
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
    if not path.exists():
        return
    try:
        shutil.rmtree(path)
    except OSError as error:
        warnings.warn(f"could not remove {path}: {error}", CheckpointWarning, stacklevel=3)
