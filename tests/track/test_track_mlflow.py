"""The MLflow tracker against a real tracking server on loopback (started once for the module, ~9 s): what each
method leaves in the run, read back with MLflow's own client; resume into the same run; a `train --tracker mlflow` run
and its resume end to end; the local default store; and, last (it kills the module's server), a run whose server is
killed mid-run."""

import importlib.util
import json
import tempfile
import threading
import time
from pathlib import Path

import PIL.Image
import pytest
from click.testing import CliRunner

pytest.importorskip("mlflow")

from mlflow.tracking import MlflowClient  # noqa: E402
from mlflow_server import mlflow_server  # noqa: E402
from track_helpers import squares_shards, squares_zip, train_args  # noqa: E402

from ganforge.cli import main  # noqa: E402
from ganforge.track.mlflow_tracker import MlflowTracker  # noqa: E402
from server_helpers import http_server  # noqa: E402


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with mlflow_server(tmp_path_factory.mktemp("mlflow")) as started:
        yield started


@pytest.fixture
def client(server):
    return MlflowClient(tracking_uri=server.uri)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return squares_zip(tmp_path_factory.mktemp("data"))


def _train(data, outdir, kimg: float, *extra: str):
    return CliRunner().invoke(main, train_args(data, outdir, kimg, *extra), catch_exceptions=False)


def _started(server, run_dir: Path, resume_id: str | None = None, project: str | None = "tests") -> MlflowTracker:
    tracker = MlflowTracker(server.uri, project, None)
    tracker.start(run_dir, resume_id)
    return tracker


def _steps(client, run_id: str, key: str) -> list[tuple[int, float]]:
    return sorted((m.step, m.value) for m in client.get_metric_history(run_id, key))


def _png(path: Path) -> Path:
    PIL.Image.new("RGB", (8, 8), (200, 10, 10)).save(path)
    return path


def test_params_and_tags_beyond_one_batch_and_a_retry(server, client, tmp_path):
    tracker = _started(server, tmp_path / "run")
    params = {f"group.option{i}": i * 0.5 for i in range(230)} | {"flag": True, "none": None, "long": "x" * 7000}
    tags = {f"tag{i}": f"v{i}" for i in range(120)}
    tracker.params(params, tags)
    tracker.params(params, tags)  # what a retry after a lost answer does: same values, no error
    data = client.get_run(tracker._run_id).data
    assert len(data.params) == len(params)
    assert data.params["group.option7"] == "3.5" and data.params["flag"] == "True" and data.params["none"] == "None"
    assert data.params["long"] == "x" * 6000  # MLflow's limit
    assert {key: data.tags[key] for key in tags} == tags
    assert not [key for key in data.tags if key.startswith("param_changed.")]


def test_scalars_are_histories_by_image_count_without_non_finite_values(server, client, tmp_path):
    tracker = _started(server, tmp_path / "run")
    for step in (0, 4000, 8000):
        tracker.scalars({"Loss/G/main": step / 1000, "Loss/D/r1": float("nan") if step else 1.0}, step)
    tracker.scalars({"Metrics/fid50k_full": 12.5, "Timing/img_per_s": float("inf")}, 8000)
    run_id = tracker._run_id
    assert _steps(client, run_id, "Loss/G/main") == [(0, 0.0), (4000, 4.0), (8000, 8.0)]
    assert _steps(client, run_id, "Loss/D/r1") == [(0, 1.0)]
    assert _steps(client, run_id, "Metrics/fid50k_full") == [(8000, 12.5)]
    assert "Timing/img_per_s" not in client.get_run(run_id).data.metrics


def test_images_by_step_and_artifacts_in_their_folders(server, client, tmp_path):
    tracker = _started(server, tmp_path / "run")
    tracker.image("fakes", _png(tmp_path / "fakes000400.png"), 400)
    (tmp_path / "network-snapshot-000400.safetensors").write_bytes(b"weights")
    tracker.artifact(tmp_path / "network-snapshot-000400.safetensors", "snapshots")
    run_id = tracker._run_id
    assert [f.path for f in client.list_artifacts(run_id, "samples")] == ["samples/fakes000400.png"]
    by_step = [f.path for f in client.list_artifacts(run_id, "images")]  # names: key, step, time, uuid
    assert any(name.startswith("images/fakes") and "step" in name and "400" in name for name in by_step), by_step
    assert [f.path for f in client.list_artifacts(run_id, "snapshots")] == [
        "snapshots/network-snapshot-000400.safetensors"
    ]
    downloaded = client.download_artifacts(run_id, "snapshots/network-snapshot-000400.safetensors", str(tmp_path))
    assert Path(downloaded).read_bytes() == b"weights"


def test_alerts_are_a_text_file_each_a_tag_and_a_count_by_step(server, client, tmp_path):
    tracker = _started(server, tmp_path / "run")
    tracker.alert("loss diverged", 1200)
    tracker.alert("data loader stalled", 3600)
    run_id = tracker._run_id
    assert client.get_run(run_id).data.tags["last_alert"] == "data loader stalled"
    assert _steps(client, run_id, "Alerts/count") == [(1200, 1.0), (3600, 2.0)]
    files = [f.path for f in client.list_artifacts(run_id, "alerts")]
    assert files == ["alerts/001_step1200.txt", "alerts/002_step3600.txt"]
    assert Path(client.download_artifacts(run_id, files[0], str(tmp_path))).read_text() == "step 1200: loss diverged\n"


@pytest.mark.parametrize("status, expected", [("finished", "FINISHED"), ("failed", "FAILED"), ("stopped", "KILLED")])
def test_finish_sets_the_run_status(server, client, tmp_path, status, expected):
    tracker = _started(server, tmp_path / "run")
    assert client.get_run(tracker._run_id).info.status == "RUNNING"
    tracker.finish(status)
    assert client.get_run(tracker._run_id).info.status == expected


def test_resume_continues_the_same_run_and_tags_a_changed_param(server, client, tmp_path):
    first = _started(server, tmp_path / "run")
    run_id = first._run_id
    first.params({"loss.gamma": 10.0, "report.ticks": 4}, {"config_hash": "abc"})
    first.scalars({"Loss/G/main": 1.0}, 0)
    first.scalars({"Loss/G/main": 2.0}, 1000)
    first.alert("slow", 1000)
    first.finish("stopped")

    second = _started(server, tmp_path / "run", resume_id=run_id)
    assert second._run_id == run_id and client.get_run(run_id).info.status == "RUNNING"
    second.params({"loss.gamma": 10.0, "report.ticks": 8}, {"config_hash": "abc"})  # a changed non-maths option
    second.scalars({"Loss/G/main": 3.0}, 2000)
    second.alert("slow again", 2000)
    second.finish("finished")

    run = client.get_run(run_id)
    assert run.data.params == {"loss.gamma": "10.0", "report.ticks": "4"}
    assert run.data.tags["param_changed.report.ticks"] == "8"
    assert "param_changed.loss.gamma" not in run.data.tags
    assert _steps(client, run_id, "Loss/G/main") == [(0, 1.0), (1000, 2.0), (2000, 3.0)]
    assert _steps(client, run_id, "Alerts/count") == [(1000, 1.0), (2000, 2.0)]  # the count goes on
    assert run.info.status == "FINISHED"


@pytest.mark.parametrize("unknown", ["0123456789abcdef0123456789abcdef", "wandb-id"])
def test_resume_with_an_id_this_server_does_not_have_starts_a_new_run(server, client, tmp_path, unknown):
    tracker = MlflowTracker(server.uri, "tests", None)
    run_id = tracker.start(tmp_path / "run", unknown)
    assert run_id != unknown and client.get_run(run_id).info.status == "RUNNING"


def test_names_come_from_the_arguments_else_the_environment_else_the_run_folder(server, client, tmp_path, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_URI", server.uri)
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "from-env")
    run = client.get_run(MlflowTracker(None, None, None).start(tmp_path / "00003-ffhq", None))
    assert run.info.run_name == "00003-ffhq"
    assert client.get_experiment(run.info.experiment_id).name == "from-env"
    run = client.get_run(MlflowTracker(server.uri, "given", "named").start(tmp_path / "00004-ffhq", None))
    assert run.info.run_name == "named" and client.get_experiment(run.info.experiment_id).name == "given"


def test_a_training_run_and_its_resume_fill_one_mlflow_run(server, client, data, tmp_path):
    """`train --tracker mlflow` end to end: what the run folder gets reaches the tracker run, the same command with a
    longer --kimg continues it, and `report --to mlflow` uploads the folder after the fact as a second run."""
    tracking = ["--tracker", "mlflow", "--tracker-uri", server.uri, "--tracker-project", "e2e"]
    result = _train(data, tmp_path / "runs", 0.016, *tracking, "--tracker-artifacts", "snapshots")
    assert result.exit_code == 0, result.output
    (run,) = (tmp_path / "runs").iterdir()
    run_id = json.loads((run / "trackers.json").read_text())["mlflow"]
    said = f"tracking: mlflow run {run_id} in {server.uri}"  # where the run went, on the terminal and in log.txt
    assert said in result.output and said in (run / "log.txt").read_text()
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


# Secrets planted in the URLs of the next test; none may leave memory.
DATA_PASSWORD, TRACKER_PASSWORD = "PLANTEDdataPassw0rd", "PLANTEDtrackerPassw0rd"
SIGNATURES = ("PLANTEDsignature1", "PLANTEDsignature2")  # the URL signed once, then signed afresh
SECRETS = (DATA_PASSWORD, TRACKER_PASSWORD, *SIGNATURES)


def test_no_secret_of_a_url_reaches_the_run_its_tracker_or_the_output(server, client, tmp_path):
    """--data with credentials and a signed query, --tracker-uri with credentials: the run reads its shards and
    reaches its tracker with them, and the same command with the URL signed afresh continues it; yet no file of the
    run (snapshots, checkpoints, TensorBoard's event files, report.html), nothing the tracker stored (a live run's
    and an upload's), no line printed and not the run folder's name holds a planted secret."""
    squares_shards(tmp_path)
    tracker_uri = server.uri.replace("http://", f"http://ganforge:{TRACKER_PASSWORD}@")
    tracking = ["--tracker", "mlflow", "--tracker-uri", tracker_uri, "--tracker-project", "secrets"]
    outputs = []
    with http_server(tmp_path) as shard_server:
        host = shard_server.url.removeprefix("http://")
        for signature, extra in ((SIGNATURES[0], ["--dry-run"]), (SIGNATURES[0], []), (SIGNATURES[1], [])):
            url = (
                f"http://reader:{DATA_PASSWORD}@{host}/shards/?X-Amz-Credential={signature}&X-Amz-Signature={signature}"
            )
            result = CliRunner().invoke(main, train_args(url, tmp_path / "runs", 0.016, *tracking, *extra))
            assert result.exit_code == 0, result.output
            outputs.append(result.output)
        assert shard_server.requests  # the shards came over HTTP
    (run,) = (tmp_path / "runs").iterdir()
    assert run.name == "00000-shards-tiny-gpus1-batch8" and "(same command)" in outputs[2]
    # report.html, from what the run recorded, uploaded with the rest of the folder
    uploaded = CliRunner().invoke(main, ["report", str(run), "--to", "mlflow", "--tracker-uri", tracker_uri])
    assert uploaded.exit_code == 0, uploaded.output
    outputs.append(uploaded.output)
    params = client.get_run(json.loads((run / "trackers.json").read_text())["mlflow"]).data.params
    public = f"http://{host}/shards/?X-Amz-Credential=REDACTED&X-Amz-Signature=REDACTED"
    assert params["data.path"] == public and params["run.tracker_uri"] == server.uri
    files = [path for folder in (run, server.root) for path in folder.rglob("*") if path.is_file()]
    assert (run / "report.html").is_file() and any(path.name.startswith("events.out.tfevents") for path in files)
    leaks = [(str(path), secret) for path in files for secret in SECRETS if secret.encode() in path.read_bytes()]
    leaks += [(output, secret) for output in outputs for secret in SECRETS if secret in output]
    assert not leaks


@pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy is deprecated")  # inside mlflow's SQL store
def test_without_a_uri_the_store_is_in_the_run_folder(tmp_path, monkeypatch, capfd):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    cwd = Path(tempfile.mkdtemp(dir=tmp_path))
    monkeypatch.chdir(cwd)
    run_dir = tmp_path / "00000-run"
    tracker = MlflowTracker(None, None, None)
    run_id = tracker.start(run_dir, None)
    tracker.scalars({"Loss/G/main": 1.0}, 0)
    tracker.artifact(_png(tmp_path / "fakes000000.png"), "samples")
    tracker.finish("finished")

    assert list(cwd.iterdir()) == []  # nothing in the folder training was started from
    store = (run_dir / "mlruns" / "mlflow.db").resolve()
    assert tracker.location == f"{store} (to browse it: mlflow ui --backend-store-uri sqlite:///{store})"
    assert " INFO " not in capfd.readouterr().err  # MLflow's and its migrations' INFO lines are not the user's
    local = MlflowClient(tracking_uri=f"sqlite:///{run_dir / 'mlruns' / 'mlflow.db'}")
    run = local.get_run(run_id)
    assert run.info.run_name == "00000-run" and local.get_experiment(run.info.experiment_id).name == "ganforge"
    assert run.info.artifact_uri.startswith((run_dir / "mlruns" / "artifacts").resolve().as_uri())
    assert list((run_dir / "mlruns" / "artifacts").rglob("fakes000000.png"))
    assert MlflowTracker(None, None, None).start(run_dir, run_id) == run_id  # the same store on resume


def test_without_a_uri_and_without_sqlalchemy_the_error_says_what_to_install(tmp_path, monkeypatch):
    """mlflow-skinny (the `ganforge[mlflow]` extra) has no SQL store: MLflow's own error would name its model
    registry, so the tracker names the fix instead."""
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "sqlalchemy" else real(name, *a))
    with pytest.raises(RuntimeError, match="pip install mlflow"):
        MlflowTracker(None, None, None).start(tmp_path / "run", None)


@pytest.fixture
def quick_failures(monkeypatch):
    """A down server answers no request: fail each at once rather than after MLflow's minutes of retries."""
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "5")


def test_a_server_killed_mid_run_costs_a_warning_not_the_run(server, data, tmp_path, quick_failures):
    """`train --tracker mlflow` whose server dies after the first tick. The module's last test: it kills the server."""
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
