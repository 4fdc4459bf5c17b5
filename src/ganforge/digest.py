"""The SHA-256 of a file, read in pieces: one helper for what records where a file came from (import's source, an
export card's model and network) and for checking downloaded weights."""

import hashlib
from pathlib import Path


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of the file's bytes; OSError when it cannot be read (the caller names the file)."""
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while chunk := file.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
