"""A run's events go through one fan-out to the sinks given when its log is made: each sink gets every event, in
the order the run emits them; a tracker that fails holds up none of the other sinks."""

import json
import threading
import time

import numpy as np
import pytest
import torch

from ganforge.events import FanOut, Quiet
from ganforge.track import session
from ganforge.train import logs
from ganforge.train.facts import DatasetFacts, Facts
from ganforge.train.options import TrainOptions
from ganforge.train.resolver import resolve
from ganforge.train.sinks import folder_sinks


class Recording(Quiet):
    """A sink that keeps every event it is given, in order."""

    def __init__(self):
        self.events = []

    def line(self, text, terminal):
        self.events.append(("line", text, terminal))

    def tick(self, record, alerts, nimg):
        self.events.append(("tick", record["tick"], record["kimg"], alerts, nimg))

    def metric(self, record, nimg):
        self.events.append(("metric", record["metric"], nimg))

    def images(self, tag, grid, path, nimg):
        self.events.append(("images", tag, grid.shape, path.name, nimg))

    def saved(self, kind, path):
        self.events.append(("saved", kind, path.name))

    def close(self, outcome):
        self.events.append(("close", outcome))


def _alert_at_the_second_tick(record: dict) -> list[str]:
    return ["D diverged"] if record["tick"] == 2 else []


def _emit_a_short_run(log: logs.RunLog, run_dir) -> None:
    """Every event of a run, its close aside."""
    log.print("starting at 0 kimg")
    log.record("derived: detail for log.txt")
    log.images("reals", np.zeros([8, 8, 1], np.uint8), run_dir / "reals.png", 0)
    log.tick(0, 0, {}, torch.device("cpu"))  # nothing trained yet: no record
    log.tick(16, 1, {"Loss/G/main": 0.5}, torch.device("cpu"))
    log.tick(32, 2, {"Loss/G/main": 0.25}, torch.device("cpu"))
    log.metric({"metric": "fid50k_full", "results": {"fid50k_full": 12.5}, "seconds": 3.0}, 32)
    log.saved("snapshot", run_dir / "network-snapshot-000000.safetensors")
    log.saved("checkpoint", run_dir / "ckpt-000000032")
    log.outcome = "finished"


def test_a_sink_given_at_construction_receives_every_event_in_order(tmp_path):
    first, second = Recording(), Recording()
    log = logs.RunLog(tmp_path, 32, 0, [first, second], watch=_alert_at_the_second_tick)
    _emit_a_short_run(log, tmp_path)
    log.close()
    expected = [
        ("line", "starting at 0 kimg", True),
        ("line", "derived: detail for log.txt", False),
        ("images", "reals", (8, 8, 1), "reals.png", 0),
        ("tick", 1, 0.016, [], 16),
        ("tick", 2, 0.032, ["D diverged"], 32),
        ("metric", "fid50k_full", 32),
        ("saved", "snapshot", "network-snapshot-000000.safetensors"),
        ("saved", "checkpoint", "ckpt-000000032"),
        ("close", "finished"),
    ]
    assert first.events == expected and second.events == expected
    assert not (tmp_path / "log.txt").exists()  # the sinks given replace the run folder's


def test_the_run_folder_sinks_write_the_same_events_and_a_rank_without_sinks_is_silent(tmp_path):
    recording = Recording()
    log = logs.RunLog(tmp_path, 32, 0, [*folder_sinks(tmp_path, 32, 0), recording], _alert_at_the_second_tick)
    _emit_a_short_run(log, tmp_path)
    log.close()
    records = [json.loads(line) for line in (tmp_path / "stats.jsonl").read_text().splitlines()]
    assert [(r["tick"], r.get("alerts")) for r in records] == [(1, None), (2, ["D diverged"])]
    lines = (tmp_path / "log.txt").read_text().splitlines()
    assert lines[:2] == ["starting at 0 kimg", "derived: detail for log.txt"]
    assert lines[2].startswith("tick 1 ") and lines[3].startswith("tick 2 ") and "G 0.250" in lines[3]
    assert lines[4:] == ["warning: D diverged", "metric fid50k_full = 12.5 (3 s)"]
    assert recording.events[-1] == ("close", "finished")
    watched = []
    silent = logs.RunLog(None, 32, 0, watch=watched.append)  # another rank: nothing written, nothing watched
    _emit_a_short_run(silent, tmp_path / "elsewhere")
    silent.close()
    assert watched == [] and not (tmp_path / "elsewhere").exists()


class Flaky:
    """A tracker whose server refuses the first call, then answers, and never ends its run (until `ended` is set)."""

    name, location = "mlflow", "http://mlflow.example"

    def __init__(self):
        self.refused, self.ended = False, threading.Event()

    def __getattr__(self, method):
        def call(*args):
            if not self.refused:
                self.refused = True
                raise ConnectionError("server down")
            if method == "finish":
                self.ended.wait()
            return "id-1" if method == "start" else None

        return call


def test_a_failing_tracker_stops_none_of_the_other_sinks_and_its_warnings_reach_log_txt(tmp_path, monkeypatch):
    monkeypatch.setattr(session, "CLOSE_TIMEOUT_S", 0.2)  # the run's end waits this long for the tracker
    options = TrainOptions(data=str(tmp_path / "data"), outdir=str(tmp_path), preset="tiny", tracker="mlflow")
    cfg = resolve(options, Facts(DatasetFacts(8, 1, 0, "squares", 32), 1, "cpu"))
    tracker, after = Flaky(), Recording()

    def trackers(say):
        return session.TrackedRun(cfg, tmp_path, say, make=lambda *names: tracker)

    try:
        log = logs.RunLog(tmp_path, 32, 0, [*folder_sinks(tmp_path, 32, 0, trackers), after], _alert_at_the_second_tick)
        _emit_a_short_run(log, tmp_path)  # while the tracker is failing
        deadline = time.monotonic() + 10
        while "reachable again" not in (tmp_path / "log.txt").read_text() and time.monotonic() < deadline:
            time.sleep(0.01)  # its retry, a second later
        log.close()
        text = (tmp_path / "log.txt").read_text()
    finally:
        tracker.ended.set()
    assert "warning: mlflow: start failed (ConnectionError: server down); retrying" in text
    assert "warning: mlflow: reachable again after 1 failed attempt(s)" in text
    # the trackers closed before log.txt: what they say at the end is its last line
    assert text.splitlines()[-1].startswith("warning: mlflow: 1 event(s) not sent")
    assert len((tmp_path / "stats.jsonl").read_text().splitlines()) == 2
    assert [event[0] for event in after.events].count("tick") == 2 and after.events[-1] == ("close", "finished")


class Refusing(Recording):
    def close(self, outcome):
        super().close(outcome)
        raise OSError("disk full")


def test_every_sink_is_closed_when_one_fails_to_close():
    sinks = [Recording(), Refusing(), Recording()]
    with pytest.raises(OSError, match="disk full"):
        FanOut(sinks).close("failed")
    assert [sink.events for sink in sinks] == [[("close", "failed")]] * 3
