"""The latent files `ganforge explore` may read: each --latents source is a projected_w.npz (as `ganforge project`
writes it) or a folder of them (or of project's own folders, one per target), listed again whenever the page asks, so
that a projection finished meanwhile shows up. A request names a file by the name /api/latents lists, never by a path
of its own: the server opens only files it listed itself. Their contents are judged by generate's reader
(ganforge.projected), as hostile as any file."""

import itertools
import os
from pathlib import Path

from ganforge.errors import UserError
from ganforge.generate.typed import echoed

SUFFIX = ".npz"
MAX_LISTED = 256  # files offered from one folder; a page's list, not an archive
MAX_SCANNED = 10_000  # entries of one folder and its folders looked at: millions are cut short, not read to the end


class LatentFiles:
    """The --latents sources, in order."""

    def __init__(self, sources):
        self.sources = tuple(Path(source) for source in sources)

    def check(self) -> None:
        """UserError naming each source that is neither a file nor a folder."""
        missing = [source for source in self.sources if not (source.is_file() or source.is_dir())]
        if missing:
            raise UserError(
                *(f"--latents {echoed(str(s), 200)}: no such file or folder; give a projected_w.npz (as `ganforge "
                  "project` writes it) or a folder of them" for s in missing)
            )  # fmt: skip

    def listed(self) -> dict[str, Path]:
        """{name the page shows and sends: the file}, sources in order, each folder's .npz files by path."""
        found = {}
        for source in self.sources:
            for path in _npz_files(source) if source.is_dir() else [source]:
                found.setdefault(str(path), path)
        return found

    def path(self, name: str, parameter: str) -> Path:
        """The file listed as `name`; UserError naming the request's `parameter` otherwise."""
        path = self.listed().get(name)
        if path is None:
            raise UserError(f"{parameter}={echoed(name, 60)}: not a latent file of this server; one of /api/latents")
        return path

    @staticmethod
    def stamp(path: Path) -> tuple[int, int]:
        """(modification time in ns, size) of `path`: a file rewritten since is another answer than the cached one."""
        try:
            info = os.stat(path)
        except OSError as error:
            raise UserError(f"{echoed(str(path), 200)}: cannot be read ({error.strerror})") from None
        return info.st_mtime_ns, info.st_size


def _npz_files(folder: Path) -> list[Path]:
    """The first MAX_LISTED .npz files in `folder` and in its folders (`ganforge project --outdir FOLDER` writes
    FOLDER/<target>/projected_w.npz), by path, among the first MAX_SCANNED entries looked at."""
    entries = itertools.islice(_two_levels(folder), MAX_SCANNED)
    return sorted(Path(entry.path) for entry in entries if entry.name.endswith(SUFFIX) and entry.is_file())[:MAX_LISTED]


def _two_levels(folder: Path):
    """The entries of `folder`, each folder among them followed by its own entries."""
    for entry in _scan(folder):
        yield entry
        if entry.is_dir():
            yield from _scan(Path(entry.path))


def _scan(folder: Path):
    """The entries of `folder`; none when it cannot be read (removed or made unreadable since the start)."""
    try:
        with os.scandir(folder) as entries:
            yield from entries
    except OSError:
        return


NO_LATENTS = LatentFiles(())  # a server given no --latents
