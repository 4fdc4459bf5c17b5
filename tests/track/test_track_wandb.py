"""The W&B tracker in W&B's offline mode (no network, no account), read back from the transaction log W&B wrote.

One module-scoped pair of runs (W&B starts its service process once per process): a first part stopped as if
preempted, then resumed under the same id and finished; the tests read what each part recorded. The calls run on one
background thread, as ganforge makes them. W&B's environment, home and files live in a temporary folder.
"""

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

wandb = pytest.importorskip("wandb")

from track_helpers import squares_zip, train_args  # noqa: E402
from wandb_offline import read_runs  # noqa: E402

from ganforge.cli import main  # noqa: E402
from ganforge.track.wandb_tracker import WandbTracker  # noqa: E402

PARAMS = {"loss.gamma": 10.0, "data.path": "/data/ffhq", "ema.rampup": None, "augment.xflip": True, "batch": 32}
TAGS = {"config_hash": "3f2a9c", "math": "loss.gamma,batch", "version": "0.1.0"}


def _on_thread(call, *args):
    """`call(*args)` on a thread of its own, as track.background runs a tracker; its exception is raised here."""
    out = {}

    def run():
        try:
            out["value"] = call(*args)
        except BaseException as error:  # re-raised in the test's thread
            out["error"] = error

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive(), f"{call.__name__} still running after 60 s"
    if "error" in out:
        raise out["error"]
    return out.get("value")


@pytest.fixture(scope="module")
def offline(tmp_path_factory):
    """W&B offline with every WANDB_* variable of the outer environment removed and its home folders in tmp; W&B's
    process-wide session (its service process, the `sys.excepthook`/`sys.exit` wrappers it installs) is torn down
    and undone afterwards, so no other test sees it."""
    home = tmp_path_factory.mktemp("home")
    hooks = sys.excepthook, sys.exit
    with pytest.MonkeyPatch.context() as mp:
        for name in [name for name in list(os.environ) if name.startswith("WANDB_")]:
            mp.delenv(name)
        mp.setenv("HOME", str(home))
        for name in ("WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR", "WANDB_ARTIFACT_DIR"):
            mp.setenv(name, str(home / name.lower()))
        mp.setenv("WANDB_MODE", "offline")
        mp.setenv("WANDB_SILENT", "true")
        mp.chdir(home)
        wandb.teardown()  # a session set up before would keep its environment
        yield
        wandb.teardown()
    sys.excepthook, sys.exit = hooks


@pytest.fixture(scope="module")
def run(offline, tmp_path_factory):
    """A first part that logs everything once and stops (preempted), a second that resumes it and finishes."""
    run_dir = tmp_path_factory.mktemp("runs") / "00003-ffhq-tiny"
    run_dir.mkdir()
    png = run_dir / "fakes000002.png"
    png.write_bytes(_png())
    snapshot = run_dir / "network-snapshot-000002.safetensors"
    snapshot.write_bytes(b"snapshot bytes")
    (run_dir / "report.html").write_text("<html></html>")
    watched = _process_state()

    first = WandbTracker(None, None, None)
    run_id = _on_thread(first.start, run_dir, None)
    disturbed = watched != _process_state()
    settings, location = first._run.settings, first.location  # what W&B made of the tracker's settings; where
    _on_thread(first.params, PARAMS, TAGS)
    _on_thread(first.scalars, {"Loss/G/main": 1.5, "Loss/D/main": 0.5}, 1000)
    _on_thread(first.scalars, {"Loss/G/main": 1.25}, 2000)
    _on_thread(first.scalars, {"Loss/G/main": 99.0}, 1500)  # below the last step: dropped, no error
    _on_thread(first.image, "fakes", png, 2000)
    _on_thread(first.alert, "Loss/G/main diverged\nlast finite value 1.25", 2000)
    _on_thread(first.artifact, snapshot, "snapshots")
    _on_thread(first.artifact, snapshot, "snapshots")  # a retry
    _on_thread(first.artifact, run_dir / "report.html", "")
    _on_thread(first.finish, "stopped")

    # Older wandb (0.22) names an offline part after the second it started in, and a part started in the same
    # second replaces the first; 0.31 appends -1, -2, ...
    time.sleep(1 - time.time() % 1)
    second = WandbTracker(None, None, None)
    resumed_id = _on_thread(second.start, run_dir, run_id)
    _on_thread(second.scalars, {"Loss/G/main": 1.0}, 3000)
    _on_thread(second.finish, "finished")
    _on_thread(second.finish, "finished")  # a retry: nothing more
    wandb.teardown()  # waits for W&B's service process, which may still be writing a log when `finish` returns
    parts = read_runs(run_dir / "wandb", run_id)
    capture = settings.console, settings.x_disable_stats
    return {"id": run_id, "resumed_id": resumed_id, "capture": capture, "disturbed": disturbed, "parts": parts,
            "location": location}  # fmt: skip


def _process_state() -> tuple:
    """What console capture or signal handling would change: the streams, the files behind descriptors 1 and 2 (a
    redirect puts a pipe there), the SIGINT/SIGTERM handlers."""
    files = tuple((os.fstat(fd).st_dev, os.fstat(fd).st_ino) for fd in (1, 2))
    return sys.stdout, sys.stderr, files, signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)


def _png() -> bytes:
    from io import BytesIO

    from PIL import Image

    out = BytesIO()
    Image.new("RGB", (8, 4), (200, 30, 30)).save(out, format="PNG")
    return out.getvalue()


def _rows(parts) -> dict[int, dict]:
    """History of all parts by `_step`."""
    return {row["_step"]: row for part in parts for row in part.history}


def test_start_names_the_run_in_the_default_project_and_leaves_the_process_alone(run):
    first, _ = run["parts"]
    assert (first.run_id, first.project, first.name) == (run["id"], "ganforge", "00003-ffhq-tiny")
    assert run["capture"] == ("off", True)  # neither console capture nor system-metrics sampling
    assert not run["disturbed"]  # streams, descriptors 1 and 2, signal handlers: as they were
    folder, _ = run["location"].split(" (offline; to upload it: wandb sync ")  # the run's offline folder, said
    assert Path(folder).parent.name == "wandb" and Path(folder).name.startswith("offline-run-")


def test_params_and_tags_are_the_config(run):
    first, _ = run["parts"]
    assert {key: first.config[key] for key in PARAMS} == PARAMS
    assert {key: first.config[f"ganforge/{key}"] for key in TAGS} == TAGS


def test_scalars_at_their_steps_and_a_step_below_the_last_dropped(run):
    rows = _rows(run["parts"])
    assert sorted(rows) == [1000, 2000, 3000]
    assert (rows[1000]["Loss/G/main"], rows[1000]["Loss/D/main"]) == (1.5, 0.5)
    assert (rows[2000]["Loss/G/main"], rows[3000]["Loss/G/main"]) == (1.25, 1.0)
    first, _ = run["parts"]  # dropped by the tracker, not by W&B, which logs and warns for each value it ignores
    assert "ignoring partial history record" not in (first.folder / "logs" / "debug-internal.log").read_text()


def test_image_at_its_step_in_the_runs_files(run):
    first, _ = run["parts"]
    image = _rows(run["parts"])[2000]["fakes"]
    assert (image["_type"], image["width"], image["height"]) == ("image-file", 8, 4)
    assert (first.folder / "files" / image["path"]).read_bytes() == _png()
    assert image["path"] in first.files


def test_alert_is_a_wandb_alert_and_in_history_and_summary(run):
    first, _ = run["parts"]
    text = "Loss/G/main diverged\nlast finite value 1.25"
    assert first.alerts == [("Loss/G/main diverged", f"00003-ffhq-tiny, 2000 images: {text}")]
    assert _rows(run["parts"])[2000]["Alerts/text"] == text
    assert first.summary["Alerts/text"] == text


def test_artifact_is_a_file_of_its_own_in_the_folder_asked_for(run):
    first, _ = run["parts"]
    saved = first.folder / "files" / "snapshots" / "network-snapshot-000002.safetensors"
    assert saved.read_bytes() == b"snapshot bytes" and not saved.is_symlink()
    assert "snapshots/network-snapshot-000002.safetensors" in first.files
    assert "report.html" in first.files and (first.folder / "files" / "report.html").is_file()


def test_stopped_is_preempted_and_resumes_the_same_run_which_finishes(run):
    first, second = run["parts"]
    assert run["resumed_id"] == second.run_id == run["id"]
    assert (first.exit_code, first.preempting, first.summary["ganforge/status"]) == (1, True, "stopped")
    assert (second.exit_code, second.preempting, second.summary["ganforge/status"]) == (0, False, "finished")


def test_failed_run_named_in_a_project(offline, tmp_path):
    tracker = WandbTracker(None, "gan-lab", "ffhq-baseline")
    run_id = _on_thread(tracker.start, tmp_path, None)
    _on_thread(tracker.finish, "failed")
    wandb.teardown()
    (part,) = read_runs(tmp_path / "wandb", run_id)
    assert (part.project, part.name, part.exit_code, part.preempting) == ("gan-lab", "ffhq-baseline", 1, False)
    assert part.summary["ganforge/status"] == "failed"


def test_constructor_does_no_io(offline, tmp_path):
    WandbTracker("http://127.0.0.1:9", None, None)
    assert not list(tmp_path.iterdir()) and not Path("wandb").exists()


def test_wandb_dir_is_honoured(offline, tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "elsewhere"))
    wandb.teardown()  # W&B reads its environment once per session
    tracker = WandbTracker(None, None, None)
    run_id = _on_thread(tracker.start, tmp_path / "run", None)
    _on_thread(tracker.finish, "finished")
    wandb.teardown()
    assert [part.exit_code for part in read_runs(tmp_path / "elsewhere" / "wandb", run_id)] == [0]
    assert not (tmp_path / "run").exists()


def test_a_training_run_and_its_upload_after_the_fact(offline, tmp_path):
    """`train --tracker wandb` sends every tick at its image count; `report --to wandb` sends the same ticks again
    from the folder, with the sample grids, in order."""
    tracking = ("--tracker", "wandb", "--tracker-project", "e2e")
    args = train_args(squares_zip(tmp_path), tmp_path / "runs", 0.016, *tracking)
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (run,) = (tmp_path / "runs").iterdir()
    run_id = json.loads((run / "trackers.json").read_text())["wandb"]
    wandb.teardown()  # W&B's process has written everything once torn down
    (part,) = read_runs(run / "wandb", run_id)
    ticks = [json.loads(line) for line in (run / "stats.jsonl").read_text().splitlines()]
    losses = [(row["_step"], row["Loss/G/main"]) for row in part.history if "Loss/G/main" in row]
    assert losses == [(round(t["kimg"] * 1000), t["Loss/G/main"]) for t in ticks]
    assert part.config["loss.gamma"] == json.loads((run / "config.json").read_text())["loss"]["gamma"]
    assert part.exit_code == 0 and part.project == "e2e" and part.name == run.name
    uploaded = CliRunner().invoke(main, ["report", str(run), "--to", "wandb"], catch_exceptions=False)
    assert uploaded.exit_code == 0, uploaded.output
    new_id = uploaded.output.strip().rsplit(" ", 1)[-1]
    wandb.teardown()
    (again,) = read_runs(run / "wandb", new_id)
    steps = [row["_step"] for row in again.history]
    assert steps == sorted(steps) and {s for s, _ in losses} <= set(steps)
    assert any("fakes" in row for row in again.history) and "report.html" in " ".join(again.files)
