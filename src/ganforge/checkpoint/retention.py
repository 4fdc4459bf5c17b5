"""Which old checkpoints to delete: `--keep-last`, `--keep-every`, `--keep-max-age`.

A checkpoint is kept when any rule keeps it:
  * it is among the `keep_last` newest (by training progress);
  * `keep_every_kimg` is set and it is the earliest checkpoint at or after a positive multiple of that many kimg
    (the earliest in its bucket, so the choice never changes as training goes on): kept for good;
  * `keep_max_age_days` is set and it is younger than that;
  * it is the checkpoint just written (the newest valid one).
Without `keep_max_age_days` every checkpoint no rule keeps is deleted. Folders whose manifest cannot be read are
never deleted here: they are left for a person to look at, and loading skips them with a warning.
"""

import dataclasses
import shutil
import time
import warnings
from pathlib import Path

from ganforge.checkpoint import store
from ganforge.errors import UserError

_SECONDS_PER_DAY = 86400.0


@dataclasses.dataclass(frozen=True)
class Retention:
    """How many checkpoints to keep. `keep_last` >= 1; the other two are off when None."""

    keep_last: int = 3
    keep_every_kimg: float | None = None
    keep_max_age_days: float | None = None

    def __post_init__(self):
        problems = []
        if isinstance(self.keep_last, bool) or not isinstance(self.keep_last, int) or self.keep_last < 1:
            problems.append(f"--keep-last: must be a whole number >= 1, got {self.keep_last!r}")
        if self.keep_every_kimg is not None and not self.keep_every_kimg * 1000 >= 1:
            problems.append(f"--keep-every: must be a positive number of kimg, got {self.keep_every_kimg!r}")
        if self.keep_max_age_days is not None and not self.keep_max_age_days > 0:
            problems.append(f"--keep-max-age: must be a positive number of days, got {self.keep_max_age_days!r}")
        if problems:
            raise UserError(*problems)


@dataclasses.dataclass(frozen=True)
class Entry:
    """What retention needs to know about one checkpoint: its folder name, progress and creation time."""

    name: str
    nimg: int
    created: float


def select_deletions(entries: list[Entry], retention: Retention, protect: str, now: float) -> list[str]:
    """Names of the checkpoints to delete (a pure function of its arguments; `now` in unix seconds)."""
    by_progress = sorted(entries, key=lambda e: e.nimg)
    keep = {e.name for e in by_progress[-retention.keep_last :]} | {protect}
    if retention.keep_every_kimg is not None:
        step = round(retention.keep_every_kimg * 1000)
        earliest_in_bucket: dict[int, str] = {}
        for e in by_progress:
            earliest_in_bucket.setdefault(e.nimg // step, e.name)
        keep |= {name for bucket, name in earliest_in_bucket.items() if bucket >= 1}
    if retention.keep_max_age_days is not None:
        max_age = retention.keep_max_age_days * _SECONDS_PER_DAY
        keep |= {e.name for e in entries if now - e.created < max_age}
    return [e.name for e in by_progress if e.name not in keep]


def apply(ckpt_dir: Path, retention: Retention, protect: str, now: float | None = None) -> list[str]:
    """Delete what `select_deletions` picks among the readable checkpoints in `ckpt_dir`; return their names.

    Called only after the checkpoint `protect` has been committed. A folder that cannot be removed is reported
    as a warning: the new checkpoint is safe, so this must not fail the run.
    """
    entries = []
    for path in store.list_checkpoints(ckpt_dir):
        try:
            entries.append(Entry(path.name, store.read_manifest(path)["nimg"], store.written_at(path)))
        except (store.InvalidCheckpoint, OSError):
            continue
    doomed = select_deletions(entries, retention, protect, time.time() if now is None else now)
    for name in doomed:
        try:
            shutil.rmtree(Path(ckpt_dir) / name)
        except OSError as error:
            warnings.warn(
                f"retention: could not delete {Path(ckpt_dir) / name}: {error}", store.CheckpointWarning, stacklevel=2
            )
    return doomed
