"""What every tracker implements. A Tracker's methods are called from one background thread (track.background), in
order, and may block on the network; its constructor does no I/O. An exception from a method is retried by the
caller, so each method must be safe to call again after a failure (the tracker's own APIs are: logging a value or a
file twice at the same step overwrites or adds a duplicate point, never corrupts the run).

Steps are images (`cur_nimg`): a resumed run continues at the image count where it stopped, so its curves join the
first part's, whatever the batch size or number of GPUs.
"""

from pathlib import Path
from typing import Protocol


class Tracker(Protocol):
    name: str  # one of TRACKERS
    location: str  # where the started run is kept, for the user: a store's folder or a server (credentials never)

    def start(self, run_dir: Path, resume_id: str | None) -> str:
        """Open the tracker run, or continue the one with `resume_id` (what an earlier start returned, stored in the
        run folder's trackers.json); returns its id."""

    def params(self, params: dict, tags: dict[str, str]) -> None:
        """The run's configuration: `params` flattened (`loss.gamma`: 10.0; values str, int, float, bool or None)
        and `tags` (the config hash, which fields are training maths, the ganforge version)."""

    def scalars(self, values: dict[str, float], step: int) -> None:
        """Finite numbers at image count `step`: a tick's statistics (`Loss/G/main`, `Timing/img_per_s`, ...) or
        metric results (`Metrics/fid50k_full`)."""

    def image(self, key: str, path: Path, step: int) -> None:
        """A PNG file (a sample grid, `fakes`) at image count `step`."""

    def alert(self, text: str, step: int) -> None:
        """An alert the run raised (divergence, a stalled data loader, ...) at image count `step`."""

    def artifact(self, path: Path, folder: str) -> None:
        """Upload the file at `path` (a snapshot, a checkpoint file, report.html) under `folder` of the run."""

    def finish(self, status: str) -> None:
        """End the tracker run: `status` is "finished", "failed" or "stopped" (preempted or interrupted; resumable)."""
