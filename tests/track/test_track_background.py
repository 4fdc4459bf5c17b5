"""The background thread between training and a tracker: order, retries with one warning, a bounded queue that
drops rather than blocks, and a bounded wait at the end; and the run's tracker ids kept for a resume."""

import json
import threading

from ganforge.config import Config
from ganforge.track.background import BackgroundTracker
from ganforge.track.session import IDS_FILE, TrackedRun, config_params, metric_scalars, tracker_problems
from ganforge.train.facts import DatasetFacts, Facts
from ganforge.train.options import TrainOptions
from ganforge.train.resolver import resolve


class Recorder:
    """A tracker that records its calls; `fail` failures first, or waits on `gate` before each call."""

    name = "mlflow"

    def __init__(self, fail: int = 0, gate: threading.Event | None = None):
        self.calls, self.fail, self.gate = [], fail, gate

    def __getattr__(self, method):
        def call(*args):
            if self.gate is not None:
                self.gate.wait()
            if self.fail:
                self.fail -= 1
                raise ConnectionError("server down")
            self.calls.append((method, *args))
            return f"id-{len(self.calls)}" if method == "start" else None

        return call


def test_events_arrive_in_order_and_failures_are_retried_with_one_warning():
    warnings, tracker = [], Recorder(fail=3)
    background = BackgroundTracker(tracker, warnings.append, delays=(0.001,))
    for step in range(5):
        background.send("scalars", {"Loss/G/main": float(step)}, step)
    assert background.close("finished", timeout_s=10)
    assert tracker.calls == [("scalars", {"Loss/G/main": float(s)}, s) for s in range(5)] + [("finish", "finished")]
    assert len(warnings) == 2 and "scalars failed (ConnectionError: server down); retrying" in warnings[0]
    assert "reachable again after 3 failed attempt(s)" in warnings[1]


def test_a_stuck_tracker_never_blocks_training_and_the_end_waits_a_bounded_time():
    warnings, gate = [], threading.Event()
    background = BackgroundTracker(Recorder(gate=gate), warnings.append, capacity=3)
    for step in range(10):  # one event taken by the thread (stuck), three queued, the rest dropped
        background.send("scalars", {"x": 1.0}, step)
    assert warnings == ["mlflow is not keeping up: events are dropped (the run folder keeps them all)"]
    assert not background.close("finished", timeout_s=0.2)
    assert "event(s) not sent; `ganforge report --to mlflow RUN` uploads the run" in warnings[-1]
    gate.set()


def test_a_run_keeps_its_tracker_ids_and_a_resume_continues_them(tmp_path):
    made = []

    def make(name, uri, project, run_name):
        made.append((name, uri, project, run_name))
        return Recorder()

    cfg = _config(tmp_path)
    run = TrackedRun(cfg, tmp_path, print, make=make)
    run.tick({"tick": 1, "kimg": 0.008, "Loss/G/main": 0.5, "Loss/D/main": float("nan")}, ["D diverged"], 8)
    run.close("stopped")
    tracker = run.trackers[0].tracker._tracker
    assert made == [("mlflow", None, None, tmp_path.name)]
    assert tracker.calls[0] == ("start", tmp_path, None)
    assert tracker.calls[1][0] == "params" and tracker.calls[1][2]["ganforge.config_hash"]
    assert tracker.calls[2:] == [
        ("scalars", {"Loss/G/main": 0.5}, 8),
        ("alert", "D diverged", 8),
        ("finish", "stopped"),
    ]
    assert json.loads((tmp_path / IDS_FILE).read_text()) == {"mlflow": "id-1"}
    again = TrackedRun(cfg, tmp_path, print, make=make)
    again.close("finished")
    assert again.trackers[0].tracker._tracker.calls[0] == ("start", tmp_path, "id-1")


def test_params_are_the_flattened_config_and_the_maths_split(tmp_path):
    params, tags = config_params(_config(tmp_path))
    assert params["loss.gamma"] == 1.0 and params["run.tracker"] == "mlflow"
    assert "run.outdir" in tags["ganforge.non_maths_fields"].split(",")
    assert "loss.gamma" not in tags["ganforge.non_maths_fields"].split(",")


def test_unknown_or_missing_trackers_are_named():
    assert tracker_problems(("mlflow", "comet", "mlflow")) == [
        "--tracker comet: not a tracker; choose from mlflow, wandb",
        "--tracker mlflow,comet,mlflow: a tracker named twice",
    ]


def _config(tmp_path) -> Config:
    """A resolved tiny configuration asking for MLflow (the dataset's facts given, nothing read)."""
    options = TrainOptions(
        data=str(tmp_path / "data"), outdir=str(tmp_path), preset="tiny", tracker="mlflow", gamma=1.0
    )
    return resolve(options, Facts(DatasetFacts(8, 1, 0, "squares", 32), 1, "cpu"))


def test_a_metric_is_sent_with_its_image_counts_and_protocol(tmp_path):
    record = {"metric": "fid50k_full", "results": {"fid50k_full": 12.5, "other": float("nan")}, "num_fake": 500,
              "num_real": 1000, "protocol": "tf1-bilinear-299"}  # fmt: skip
    assert metric_scalars(record) == {
        "Metrics/fid50k_full": 12.5, "Metrics/fid50k_full/num_fake": 500.0, "Metrics/fid50k_full/num_real": 1000.0
    }  # fmt: skip
    run = TrackedRun(_config(tmp_path), tmp_path, print, make=lambda *names: Recorder())
    run.metric(record, 64)
    run.close("finished")
    calls = run.trackers[0].tracker._tracker.calls
    assert ("params", {}, {"metric.fid50k_full.protocol": "tf1-bilinear-299"}) in calls
