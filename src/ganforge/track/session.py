"""The trackers of one run (`train --tracker`): what the run folder receives, sent to each from its own thread.

Each tracker run's id is kept in RUN/trackers.json, so that a resumed run (the same command again) continues the
same tracker run, its steps (images) joining the first part's.
"""

import importlib.util
import json
import math
import threading
from pathlib import Path

import numpy as np

from ganforge import __version__
from ganforge.config import Config, config_hash, flatten, is_maths
from ganforge.config.sections import TRACKERS
from ganforge.durable import replace_file
from ganforge.events import Quiet
from ganforge.track.background import BackgroundTracker

IDS_FILE = "trackers.json"
CLOSE_TIMEOUT_S = 60.0  # at the end of a run, what is still queued gets this long, then the run ends anyway
_PACKAGES = {"mlflow": "mlflow", "wandb": "wandb"}


def tracker_problems(names) -> list[str]:
    """One message per tracker that is not one of TRACKERS, or whose package is not installed."""
    problems = []
    for name in names:
        if name not in TRACKERS:
            problems.append(f"--tracker {name}: not a tracker; choose from {', '.join(TRACKERS)}")
        elif importlib.util.find_spec(_PACKAGES[name]) is None:
            problems.append(f"--tracker {name}: its package is not installed; pip install 'ganforge[{name}]'")
    if len(set(names)) != len(names):
        problems.append(f"--tracker {','.join(names)}: a tracker named twice")
    return problems


def make_tracker(name: str, uri: str | None, project: str | None, run_name: str | None):
    """The Tracker of `name` (its package imported only now: rank 0 of a run that asked for it)."""
    if name == "mlflow":
        from ganforge.track.mlflow_tracker import MlflowTracker

        return MlflowTracker(uri, project, run_name)
    from ganforge.track.wandb_tracker import WandbTracker

    return WandbTracker(uri, project, run_name)


def config_params(cfg: Config) -> tuple[dict, dict[str, str]]:
    """(the flattened configuration as tracker params, tags: the config hash, the ganforge version, and which fields
    are not training maths, so that a tracker's UI can tell a run that computes differently from one that only wrote
    elsewhere)."""
    flat = flatten(cfg.to_dict())
    params = {key: _plain(value) for key, value in flat.items()}
    settings = sorted(key for key in flat if not is_maths(key))
    tags = {"ganforge.config_hash": config_hash(cfg), "ganforge.version": __version__}
    return params, tags | {"ganforge.non_maths_fields": ",".join(settings)}


def _plain(value):
    """A param value a tracker takes: lists and tuples as text."""
    return ",".join(map(str, value)) if isinstance(value, list | tuple) else value


def metric_scalars(record: dict) -> dict[str, float]:
    """`Metrics/<key>` for each finite value, and `Metrics/<metric>/num_fake`, `num_real`: a FID of a few hundred
    images is no FID of 50k, and a tracker's table shows the count beside the value."""
    values = {f"Metrics/{k}": v for k, v in record["results"].items() if math.isfinite(v)}
    counts = {key: record.get(key) for key in ("num_fake", "num_real")}
    name = record.get("metric") or next(iter(record["results"]), "metric")
    return values | {f"Metrics/{name}/{key}": float(n) for key, n in counts.items() if isinstance(n, int)}


class TrackedRun(Quiet):
    """The trackers `cfg.run.tracker` names, opened for `run_dir`: a run's sink (events.py) that sends each tracker
    the run's ticks, alerts, metric results, grids and saved files from its own thread; `say(text)` tells the user
    where each keeps the run and what failed (as warnings). A tracker that fails holds up neither training nor the
    other sinks: its events wait in its queue and are retried."""

    def __init__(self, cfg: Config, run_dir: Path, say, make=make_tracker):
        self.run_dir, self.artifacts, self.say = run_dir, cfg.run.tracker_artifacts, say
        self._ids_lock = threading.Lock()
        ids = self._read_ids()
        names = (cfg.run.tracker_uri, cfg.run.tracker_project, cfg.run.tracker_run_name or run_dir.name)
        self.trackers = []
        for name in cfg.run.tracker:
            tracker = _Recorded(make(name, *names), self)
            background = BackgroundTracker(tracker, self.warn)
            background.send("start", run_dir, ids.get(name))
            background.send("params", *config_params(cfg))
            self.trackers.append(background)

    def warn(self, text: str) -> None:
        self.say(f"warning: {text}")

    def _read_ids(self) -> dict:
        """trackers.json of an earlier part of this run ({} when none, or unreadable: a new tracker run then)."""
        try:
            ids = json.loads((self.run_dir / IDS_FILE).read_text())
        except (OSError, ValueError):
            return {}
        if not isinstance(ids, dict):
            return {}
        return {k: v for k, v in ids.items() if isinstance(k, str) and isinstance(v, str)}

    def remember(self, name: str, run_id: str) -> None:
        with self._ids_lock:
            ids = self._read_ids() | {name: run_id}
            replace_file(self.run_dir / IDS_FILE, (json.dumps(ids, indent=1) + "\n").encode())

    def _send(self, method: str, *args) -> None:
        for tracker in self.trackers:
            tracker.send(method, *args)

    def tick(self, record: dict, alerts: list[str], nimg: int) -> None:
        values = {k: v for k, v in record.items() if k not in ("tick", "kimg") and math.isfinite(v)}
        self._send("scalars", values, nimg)
        for alert in alerts:
            self._send("alert", alert, nimg)

    def metric(self, record: dict, nimg: int) -> None:
        """A metric result (metrics.registry's record): its values, how many images it used, and its protocol."""
        self._send("scalars", metric_scalars(record), nimg)
        if record.get("protocol"):
            self._send("params", {}, {f"metric.{record['metric']}.protocol": str(record["protocol"])})

    def images(self, tag: str, grid: np.ndarray, path: Path, nimg: int) -> None:
        self._send("image", tag, path, nimg)

    def saved(self, kind: str, path: Path) -> None:
        """A snapshot file, or each file of a checkpoint folder, as the run asked (`--tracker-artifacts`)."""
        if kind == "snapshot" and self.artifacts in ("snapshots", "checkpoints"):
            self._send("artifact", path, "snapshots")
        elif kind == "checkpoint" and self.artifacts == "checkpoints":
            for file in sorted(path.iterdir()):
                self._send("artifact", file, f"checkpoints/{path.name}")

    def close(self, status: str) -> None:
        """Send report.html (when the run wrote one), end each tracker run with `status`, and wait a bounded time."""
        report = self.run_dir / "report.html"
        if report.is_file():
            self._send("artifact", report, "")
        for tracker in self.trackers:
            tracker.close(status, CLOSE_TIMEOUT_S)


class _Recorded:
    """A tracker whose `start` also writes the id it returns into trackers.json."""

    def __init__(self, tracker, run: TrackedRun):
        self._tracker, self._run, self.name = tracker, run, tracker.name

    def start(self, run_dir: Path, resume_id: str | None) -> str:
        run_id = self._tracker.start(run_dir, resume_id)
        self._run.remember(self.name, run_id)
        self._run.say(f"tracking: {self.name} run {run_id} in {self._tracker.location}")
        return run_id

    def __getattr__(self, method: str):
        return getattr(self._tracker, method)
