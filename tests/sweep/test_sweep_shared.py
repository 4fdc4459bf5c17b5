"""A study shared by two sweep processes (two machines, each with its own folder) through a real PostgreSQL server
on loopback: the trials are split between them, none run twice, and the storage's password is written nowhere."""

import os
import subprocess
import sys

import optuna
import pytest
from sweep_helpers import make_dataset, sweep_args

from ganforge.sweep.trial import run_folder
from server_helpers import postgres_server

SECRET = "hunter2-secret"


@pytest.fixture(scope="module")
def postgres():
    with postgres_server() as url:
        yield url


def test_two_sweeps_share_one_study_through_postgresql(tmp_path, postgres):
    assert SECRET in postgres
    data = make_dataset(tmp_path / "data", count=32, res=8)
    folders = [tmp_path / "machine-a", tmp_path / "machine-b"]
    env = dict(os.environ, GANFORGE_SWEEP_STORAGE=postgres)  # the URL with its password, from the environment
    args = [sweep_args(data, folder, 3, "glr=log:0.001..0.01", pruner="none", study="shared") for folder in folders]
    args[0] += ["--parallel", "2"]  # machine A runs two trials at once, B one
    sweeps = [subprocess.Popen([sys.executable, "-m", "ganforge", *a], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True) for a in args]  # fmt: skip
    outputs = [sweep.communicate(timeout=400)[0] for sweep in sweeps]
    assert [sweep.returncode for sweep in sweeps] == [0, 0], outputs

    study = optuna.load_study(study_name="shared", storage=postgres)
    assert [t.state.name for t in study.trials] == ["COMPLETE"] * 3
    owners = sorted(t.user_attrs["owner"]["pid"] for t in study.trials)  # each asked its trials at its start
    assert sorted([owners.count(pid) for pid in set(owners)]) == [1, 2]  # A two at once, B one
    for trial in study.trials:  # each ran once, on one machine, in a folder of its number
        ran = [folder for folder in folders if run_folder(folder / "trials" / trial.user_attrs["folder"])]
        assert len(ran) == 1 and trial.user_attrs["folder"] == f"{trial.number:05d}"
    for folder in folders:
        record = (folder / "sweep.json").read_text()
        assert '"storage": "postgresql://127.0.0.1:' in record and '"study": "shared"' in record
        written = [p for p in folder.rglob("*") if p.is_file() and p.suffix in (".json", ".html", ".txt", ".jsonl")]
        assert not [p for p in written if SECRET in p.read_text(errors="replace")]
    assert not any(SECRET in output for output in outputs)
