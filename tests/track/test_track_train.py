"""`train --tracker mlflow` end to end, against a real MLflow server on loopback: what the run folder gets reaches
the tracker run, a resumed run continues it, and a server killed mid-run costs a warning, not the run."""

import json
import threading
import time

import pytest
from click.testing import CliRunner
from mlflow_server import mlflow_server
from track_helpers import squares_zip, train_args

from ganforge.cli import main

pytest.importorskip("mlflow")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return squares_zip(tmp_path_factory.mktemp("data"))


@pytest.fixture
def quick_failures(monkeypatch):
    """A down server answers no request: fail each at once rather than after MLflow's minutes of retries."""
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "5")


def _train(data, outdir, kimg: float, *extra: str):
    return CliRunner().invoke(main, train_args(data, outdir, kimg, *extra), catch_exceptions=False)


def test_a_run_and_its_resume_fill_one_mlflow_run(data, tmp_path, quick_failures):
    from mlflow.tracking import MlflowClient

    (tmp_path / "server").mkdir()
    with mlflow_server(tmp_path / "server") as server:
        tracking = ["--tracker", "mlflow", "--tracker-uri", server.uri, "--tracker-project", "e2e"]
        result = _train(data, tmp_path / "runs", 0.016, *tracking, "--tracker-artifacts", "snapshots")
        assert result.exit_code == 0, result.output
        (run,) = (tmp_path / "runs").iterdir()
        run_id = json.loads((run / "trackers.json").read_text())["mlflow"]
        client = MlflowClient(server.uri)
        tracked = client.get_run(run_id)
        assert tracked.info.status == "FINISHED" and tracked.info.run_name == run.name
        assert tracked.data.params["loss.gamma"] == str(json.loads((run / "config.json").read_text())["loss"]["gamma"])
        assert tracked.data.tags["ganforge.config_hash"]
        ticks = [json.loads(line) for line in (run / "stats.jsonl").read_text().splitlines()]
        history = client.get_metric_history(run_id, "Loss/G/main")
        assert [(m.step, m.value) for m in history] == [(round(t["kimg"] * 1000), t["Loss/G/main"]) for t in ticks]
        files = {a.path for folder in ("snapshots", "samples") for a in client.list_artifacts(run_id, folder)}
        assert {f"snapshots/{p.name}" for p in (run / "snapshots").iterdir()} <= files
        assert "samples/reals.png" in files and any(f.startswith("samples/fakes") for f in files)
        # the same command with a longer --kimg continues the same tracker run; its curve goes on
        result = _train(data, tmp_path / "runs", 0.032, *tracking)
        assert result.exit_code == 0, result.output
        assert json.loads((run / "trackers.json").read_text())["mlflow"] == run_id
        steps = [m.step for m in client.get_metric_history(run_id, "Loss/G/main")]
        assert steps == [8, 16, 24, 32] and client.get_run(run_id).info.status == "FINISHED"
        # the folder uploaded after the fact: a second tracker run with the same curve and grids
        uploaded = CliRunner().invoke(main, ["report", str(run), "--to", "mlflow", "--tracker-uri", server.uri])
        assert uploaded.exit_code == 0, uploaded.output
        copy = uploaded.output.strip().rsplit(" ", 1)[-1]
        assert copy != run_id and client.get_run(copy).info.status == "FINISHED"
        ours = [(m.step, m.value) for m in client.get_metric_history(copy, "Loss/G/main")]
        assert ours == [(m.step, m.value) for m in client.get_metric_history(run_id, "Loss/G/main")]
        assert {a.path for a in client.list_artifacts(copy)} >= {"report.html", "samples"}


def test_a_server_killed_mid_run_costs_a_warning_not_the_run(data, tmp_path, quick_failures):
    (tmp_path / "server").mkdir()
    with mlflow_server(tmp_path / "server") as server:
        stats = tmp_path / "runs"

        def kill_after_the_first_tick():
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and not any(stats.glob("*/stats.jsonl")):
                time.sleep(0.05)
            server.kill()

        killer = threading.Thread(target=kill_after_the_first_tick)
        killer.start()
        result = _train(data, stats, 0.064, "--tracker", "mlflow", "--tracker-uri", server.uri)
        killer.join()
    assert result.exit_code == 0, result.output
    (run,) = stats.iterdir()
    log = (run / "log.txt").read_text()
    assert "done: 0.064 kimg" in log
    assert "warning: mlflow: " in log and "failed" in log
    assert len((run / "stats.jsonl").read_text().splitlines()) == 8  # every tick kept in the run folder
    assert "uploads the run" in log  # the end says how to send what was not sent
