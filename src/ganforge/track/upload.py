"""`ganforge report --to mlflow|wandb RUN`: send a finished (or stopped) run folder to a tracker after the fact, for
clusters that cannot reach one while they train. What a live run sends, from the files it left: the configuration,
every tick of stats.jsonl and its alerts, the metric results at their snapshots, the sample grids, report.html, and
the snapshots or checkpoints when asked. Each upload makes a new tracker run. The run's files are only read; a
tracker's local store (RUN/mlruns without a tracking URI, RUN/wandb) is written beside them.
"""

from pathlib import Path

from ganforge.config import Config
from ganforge.errors import UserError
from ganforge.report.rundata import read_run
from ganforge.track.session import config_params, make_tracker, metric_scalars, tracker_problems

# The run's state as the report reads it -> how the tracker run ends ("stopped": it can be continued).
_ENDINGS = {"finished": "finished", "preempted": "stopped", "stopped": "stopped", "running": "stopped"}


def upload(path: Path, name: str, uri=None, project=None, run_name=None, artifacts="none", make=make_tracker) -> str:
    """Send the run folder at `path` to tracker `name`; returns the tracker run's id. UserError naming the tracker
    when it is not installed or cannot be reached."""
    problems = tracker_problems((name,))
    if problems:
        raise UserError(*(problem.replace("--tracker", "--to") for problem in problems))
    run = read_run(path)
    tracker = make(name, uri, project, run_name or path.name)
    try:
        run_id = tracker.start(path, None)
        tracker.params(*_config(run.config))
        for _step, method, args in sorted(_events(run), key=lambda event: event[0]):
            getattr(tracker, method)(*args)
        for file in _artifacts(run, artifacts):
            tracker.artifact(file, file.parent.relative_to(path).as_posix() if file.parent != path else "")
        tracker.finish(_ENDINGS.get(run.status.state, "failed"))
    except Exception as error:  # any failure of the tracker's client: the upload as a whole failed
        raise UserError(f"--to {name}: {type(error).__name__}: {str(error)[:300]}; upload it again") from None
    return run_id


def _events(run) -> list[tuple[int, str, tuple]]:
    """(image count, method, arguments) of every tick, alert, metric result and sample grid: sorted by the count
    (stably), they reach the tracker as a live run sent them, its steps never going back (W&B drops a step lower
    than the last)."""
    events = []
    for record in run.stats:
        step = round(record["kimg"] * 1000)
        events.append(
            (step, "scalars", ({k: v for k, v in record.items() if k not in ("tick", "kimg", "alerts")}, step))
        )
        events += [(step, "alert", (alert, step)) for alert in record.get("alerts", [])]
    for name, results in run.metrics.items():
        for result in results:
            if result["kimg"] is not None:
                step = round(result["kimg"] * 1000)
                events.append((step, "scalars", (metric_scalars(result | {"metric": name}), step)))
    if run.reals is not None:
        events.append((0, "image", ("reals", run.reals, 0)))
    events += [(round(kimg * 1000), "image", ("fakes", fakes, round(kimg * 1000))) for kimg, fakes in run.fakes]
    return events


def _config(config: dict | None) -> tuple[dict, dict[str, str]]:
    """The params and tags of the run's config.json (none when it is missing or not a configuration)."""
    try:
        return config_params(Config.from_dict(config or {}))
    except (TypeError, ValueError, KeyError):
        return {}, {}


def _artifacts(run, artifacts: str) -> list[Path]:
    """report.html, and the snapshot files or also each checkpoint's files as `artifacts` asks."""
    files = [run.path / "report.html"] if (run.path / "report.html").is_file() else []
    if artifacts in ("snapshots", "checkpoints"):
        files += [run.path / "snapshots" / snapshot.name for snapshot in run.snapshots]
    if artifacts == "checkpoints":
        for checkpoint in run.checkpoints:
            folder = run.path / "checkpoints" / checkpoint.name
            files += sorted(p for p in folder.iterdir() if p.is_file()) if folder.is_dir() else []
    return files
