"""Import ganforge as it was at an earlier commit, next to the working tree's, so that one process can time both
(interleaved rounds see the same machine load, which on a shared machine matters more than anything else).

    from baseline import import_baseline
    old = import_baseline("9a4686c")   # a module named ganforge_baseline; old.nets.Discriminator, ...

The commit's src/ganforge is extracted with `git archive` into a temporary folder and its imports are renamed
from `ganforge` to `ganforge_baseline`.
"""

import atexit
import importlib
import io
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NAME = "ganforge_baseline"
_IMPORT = re.compile(r"^(\s*)(from|import) ganforge(?=[\s.])", re.MULTILINE)


def import_baseline(commit: str, subpackages: tuple[str, ...] = ("nets", "train")):
    """The package at `commit` as module `ganforge_baseline`, with `subpackages` imported."""
    if NAME not in sys.modules:
        folder = Path(tempfile.mkdtemp(prefix="ganforge-baseline-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        archive = subprocess.run(["git", "-C", str(REPO), "archive", commit, "src/ganforge"], check=True,
                                 stdout=subprocess.PIPE).stdout  # fmt: skip
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(folder, filter="data")
        package = folder / "src" / "ganforge"
        for source in package.rglob("*.py"):
            source.write_text(_IMPORT.sub(rf"\1\2 {NAME}", source.read_text()))
        package.rename(folder / NAME)
        sys.path.insert(0, str(folder))
    module = importlib.import_module(NAME)
    for sub in subpackages:
        importlib.import_module(f"{NAME}.{sub}")
    return module
