"""Weights & Biases tracker (wandb 0.19.10 or later, the first with `reinit="create_new"`).

W&B's own environment variables (WANDB_MODE, WANDB_API_KEY, WANDB_PROJECT, WANDB_ENTITY, WANDB_DIR, ...) keep their
meaning; the tracker sets only what the run folder decides: the project fallback, the run name, and where W&B's files
go. `wandb` is imported in `start`, not at module level: it is an optional dependency, and importing it costs a second.
"""

import os
import secrets
import shutil
from pathlib import Path

from ganforge.urls import public_url

EXIT_CODES = {"finished": 0, "failed": 1, "stopped": 1}
ALERT_TITLE_MAX = 63  # W&B rejects alert titles of 64 characters or more


class WandbTracker:
    """A ganforge run as one W&B run; resuming continues it under the same id.

    Every call goes through the `Run` object `wandb.init` returned, never the module-level `wandb.log`/`wandb.run`, so
    several trackers (or the user's own W&B run) can live in one process without touching each other.
    """

    name = "wandb"

    def __init__(self, uri: str | None, project: str | None, run_name: str | None):
        """`uri`: the W&B server (WANDB_BASE_URL) when given; `project`: None means WANDB_PROJECT, else "ganforge";
        `run_name`: None means the run folder's name. No I/O here."""
        self.uri, self.project, self.run_name = uri, project, run_name
        self._run = None
        self._run_id: str | None = None
        self._last_step = 0
        self._ending = False
        self.location = ""

    def start(self, run_dir: Path, resume_id: str | None) -> str:
        """The id is chosen before `wandb.init`, so a retry after a failed init (which may already have created the
        run on the server) opens that same run instead of a second one. `resume="allow"` continues a run with this id
        or creates it. An offline run that resumes writes a new `offline-run-*` folder with the same id; `wandb beta
        sync` uploads such parts into one run in the order they started."""
        import wandb

        # Online, W&B's exit hook waits for its uploads without a limit by default, which could hold a preempted job
        # past its grace period; ganforge's own end waits a bounded time. Set by the user, the variable wins.
        os.environ.setdefault("WANDB_FINISH_TIMEOUT", "60")
        # W&B's alphabet for run ids is lowercase letters and digits, 8 of them by default; hex is a subset.
        self._run_id = resume_id or self._run_id or secrets.token_hex(4)
        settings = {
            "reinit": "create_new",  # several runs per process; leaves the global `wandb.run` alone
            "console": "off",  # no wrapping or redirecting of stdout/stderr (threads, a SIGWINCH handler)
            "x_disable_stats": True,  # no system-metrics sampling every few seconds: ganforge reports its own
        }
        if self.uri:
            settings["base_url"] = self.uri  # only when given: a Settings field set to None would hide WANDB_BASE_URL
        self._run = wandb.init(
            project=self.project or os.environ.get("WANDB_PROJECT") or "ganforge",
            name=self.run_name or Path(run_dir).name,
            id=self._run_id,
            resume="allow",
            dir=None if os.environ.get("WANDB_DIR") else str(run_dir),  # W&B writes into `<dir>/wandb/`
            settings=wandb.Settings(**settings),
        )
        # Online, a resumed run's next step is past its last logged one: values from a checkpoint older than that
        # point would be refused, one warning each; they are dropped quietly instead.
        self._last_step = self._run.starting_step
        folder = Path(self._run.dir).parent  # the run's folder under wandb/ (`files` is inside it)
        url = None if self._run.offline else self._run.url
        self.location = public_url(url) if url else f"{folder} (offline; to upload it: wandb sync {folder})"
        return self._run.id

    def params(self, params: dict, tags: dict[str, str]) -> None:
        """W&B tags are plain labels, not key/value pairs: the tags go into the config as `ganforge/<key>`, where
        they can be filtered and grouped on like any parameter."""
        tagged = {f"ganforge/{key}": value for key, value in tags.items()}
        self._run.config.update({**params, **tagged}, allow_val_change=True)

    def scalars(self, values: dict[str, float], step: int) -> None:
        self._log(values, step)

    def image(self, key: str, path: Path, step: int) -> None:
        import wandb

        self._log({key: wandb.Image(str(path))}, step)

    def alert(self, text: str, step: int) -> None:
        """Two records: W&B's alert (an e-mail or Slack message when the user set that up online; kept in the offline
        log), and `Alerts/text` in the history at `step`, which also makes the last alert part of the run's summary.
        The alert's title is the text's first line: W&B holds back a repeat of one title for a minute, which should
        silence a repeated alert, not a different one."""
        title = (text.splitlines() or [""])[0][:ALERT_TITLE_MAX] or "ganforge"
        self._run.alert(title=title, text=f"{self._run.name}, {step} images: {text}", level="WARN")
        self._log({"Alerts/text": text}, step)

    def artifact(self, path: Path, folder: str) -> None:
        """The file is placed at `<folder>/<name>` in the run's files folder and saved from there ("now": upload once).
        Placed ourselves because `run.save` symlinks by default: a checkpoint that retention deletes, or an atomic
        write replaces, before the upload (or before `wandb sync`, offline) would be lost. A hard link costs no space
        and keeps these bytes; a copy where the files folder is on another file system. W&B expands the path as a
        glob (`glob=False` is wandb 0.30+): under a folder whose name holds `*?[` nothing uploads now, though online
        W&B still uploads every file of the files folder when the run finishes."""
        files = Path(self._run.dir)
        target = files / folder / Path(path).name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.unlink(missing_ok=True)  # a retry finds the first try's link
        try:
            os.link(path, target)
        except OSError:
            shutil.copy2(path, target)
        self._run.save(str(target), base_path=str(files), policy="now")

    def finish(self, status: str) -> None:
        """finished -> exit code 0. failed -> 1. stopped (preempted, interrupted, resumable) -> `mark_preempting` and
        exit code 1: W&B's own contract for a run that will be resumed, shown as "preempted" (not "failed", and not
        "finished", which exit code 0 would mean) and requeued by sweeps. The status is also in the summary as
        `ganforge/status`, readable offline and wherever the UI has no word for it."""
        if not self._ending:  # a retry after a partial finish must not mark a finished run (W&B raises)
            self._run.summary["ganforge/status"] = status
            if status == "stopped":
                self._run.mark_preempting()
            self._ending = True
        self._run.finish(exit_code=EXIT_CODES[status])  # waits for uploads (online); a no-op once finished

    def _log(self, values: dict, step: int) -> None:
        """W&B requires steps that never decrease within a run process and warns on every value logged below the last
        step, then drops it; we drop it quietly. Values at the last step join that step's row."""
        if step < self._last_step:
            return
        self._run.log(values, step=step)
        self._last_step = step
