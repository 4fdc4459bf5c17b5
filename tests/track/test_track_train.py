"""`train --tracker mlflow` end to end, against a real MLflow server on loopback killed mid-run: it costs a warning,
not the run. (A run and its resume filling one tracker run are tested in test_track_mlflow.py, on its shared server.)"""

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
