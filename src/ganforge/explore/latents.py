"""The latent files `ganforge explore` may read: each --latents source is a projected_w.npz (as `ganforge project`
writes it) or a folder of them, listed again whenever the page asks, so that a projection finished meanwhile shows
up. A request names a file by the name /api/latents lists, never by a path of its own: the server opens only files
it listed itself. Their contents are judged by generate's reader (ganforge.projected), as hostile as any file."""

import os
from pathlib import Path

from ganforge.errors import UserError
from ganforge.generate.typed import echoed

SUFFIX = ".npz"
MAX_LISTED = 256  # files offered from one folder, by name; a page's list, not an archive
MAX_SCANNED = 10_000  # entries of one folder looked at: a folder of millions is cut short, not read to its end


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
        """{name the page shows and sends: the file}, sources in order, each folder's .npz files by name."""
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
    """The first MAX_LISTED .npz files of `folder` by name, among its first MAX_SCANNED entries."""
    names = []
    try:
        with os.scandir(folder) as entries:
            for count, entry in enumerate(entries):
                if count >= MAX_SCANNED:
                    break
                if entry.name.endswith(SUFFIX) and entry.is_file():
                    names.append(entry.name)
    except OSError:
        return []  # a folder removed or made unreadable since the start lists nothing
    return [folder / name for name in sorted(names)[:MAX_LISTED]]


NO_LATENTS = LatentFiles(())  # a server given no --latents
