"""A sweep of four tiny trials on CPU: two alike, one that falls behind and is pruned, one killed with its sweep
(SIGKILL) and continued from its checkpoint by a rerun of the same command, which keeps the finished trials."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
from click.testing import CliRunner
from sweep_helpers import make_dataset, sweep_args

from ganforge.cli import main
from ganforge.report.status import run_status
from ganforge.sweep.trial import run_folder

STUDY = "ganforge-sweep"


def _wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def _log(outdir: Path, folder: str) -> str:
    return (run_folder(outdir / "trials" / folder) / "log.txt").read_text()


def test_a_sweep_prunes_and_resumes_a_killed_trial(tmp_path):
    data, out = make_dataset(tmp_path / "data", count=32, res=8), tmp_path / "sweep"
    out.mkdir()
    storage = f"sqlite:///{out / 'study.db'}"
    study = optuna.create_study(storage=storage, study_name=STUDY, direction="minimize")
    # The third wrecks G at its first step: far behind at 0.016 kimg. The fourth repeats the first: killed and
    # resumed, it must end exactly where the first ended.
    for glr in (0.002, 0.0025, 0.5, 0.002):
        study.enqueue_trial({"glr": glr})
    args = sweep_args(data, out, 3, "glr=log:0.0001..1")

    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    study = optuna.load_study(study_name=STUDY, storage=storage)
    assert [t.state.name for t in study.trials] == ["COMPLETE", "COMPLETE", "PRUNED", "WAITING"]  # 3 trials asked
    assert "pruned by the sweep at 0.016 kimg: swd16k" in _log(out, "00002")
    pruned = run_folder(out / "trials" / "00002")
    assert run_status(_log(out, "00002").splitlines(), [], pruned).state == "pruned"
    finished = {folder: _log(out, folder) for folder in ("00000", "00001", "00002")}

    # The same command with --trials 4, killed as its trial starts to train: the trial checkpoints at its next step
    # and stops with it.
    killed = subprocess.Popen([sys.executable, "-m", "ganforge", *sweep_args(data, out, 4, "glr=log:0.0001..1")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        ckpt = out / "trials" / "00003"
        _wait_for(lambda: any(ckpt.glob("*/checkpoints/ckpt-000000000")), 120, "trial 3's first checkpoint")
        killed.send_signal(signal.SIGKILL)
    finally:
        killed.wait()
    _wait_for(lambda: "stopping on signal" in _log(out, "00003"), 60, "trial 3 to checkpoint and stop")

    result = CliRunner().invoke(main, sweep_args(data, out, 4, "glr=log:0.0001..1"))
    assert result.exit_code == 0, result.output
    study = optuna.load_study(study_name=STUDY, storage=storage)
    states = [(t.state.name, t.user_attrs.get("folder"), t.params["glr"]) for t in study.trials]
    assert states[3:] == [("FAIL", "00003", 0.002), ("COMPLETE", "00003", 0.002)]  # continued in its folder
    assert study.trials[4].value == study.trials[0].value  # an exact resume
    assert study.trials[4].user_attrs["resumes"] == 3
    log = _log(out, "00003")
    assert log.count("starting at 0 kimg") == 1 and "done: 0.032 kimg" in log
    assert "resuming at 0.008 kimg" in log or "resuming at 0.016 kimg" in log or "resuming at 0.024 kimg" in log
    assert [p.name for p in (out / "trials" / "00003").iterdir() if p.is_dir()] == [run_folder(ckpt).name]
    assert {folder: _log(out, folder) for folder in finished} == finished  # the finished trials were kept
    page = (out / "report.html").read_text()
    best = min(study.trials[:2] + study.trials[4:], key=lambda t: t.value)
    assert f"Best: trial {best.number}" in page and "ganforge train --data" in page and "--glr" in page
    assert "Parameter importances" in page
    assert json.loads((out / "sweep.json").read_text())["storage"] == storage  # an absolute SQLite path kept whole
    records = (run_folder(out / "trials" / "00003") / "metric-swd16k.jsonl").read_text().splitlines()
    assert {json.loads(line)["num_fake"] for line in records} == {16}  # --metrics-gen reached the measurements

    (out / "report.html").unlink()  # on demand, from the study as the sweep last wrote it
    result = CliRunner().invoke(main, ["report", str(out)])
    assert result.exit_code == 0 and (out / "report.html").read_text().count('class="status ') == 5, result.output


def test_a_sweep_stopped_by_sigterm_stops_its_trial_after_a_checkpoint_and_queues_it_to_continue(tmp_path):
    data, out = make_dataset(tmp_path / "data", count=32, res=8), tmp_path / "sweep"
    # A trial long enough (20 ticks, each measured) that it cannot finish between its first checkpoint and the signal
    args = sweep_args(data, out, 1, kimg="0.32")
    sweep = subprocess.Popen([sys.executable, "-m", "ganforge", *args], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)  # fmt: skip
    try:
        _wait_for(lambda: any(out.glob("trials/00000/*/checkpoints/ckpt-000000000")), 120, "the trial's checkpoint")
        sweep.send_signal(signal.SIGTERM)
        output = sweep.communicate(timeout=120)[0]
    finally:
        sweep.kill()
    assert sweep.returncode == 143 and "trial 0: stopped" in output, output
    assert "stopping on signal" in _log(out, "00000")
    study = optuna.load_study(study_name=STUDY, storage=f"sqlite:///{out / 'study.db'}")
    (stopped, queued) = study.trials
    assert (stopped.state.name, queued.state.name) == ("FAIL", "WAITING")
    assert (
        queued.user_attrs == {"folder": "00000", "resumes": 0} and queued.system_attrs["fixed_params"] == stopped.params
    )
