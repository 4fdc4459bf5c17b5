"""The sweep's small parts: the value read from a metric file that is still being written, which way is better,
how --parallel trials split a CPU's threads, and the study's record (public URL only)."""

import json

import optuna
import pytest

from ganforge.sweep.measure import direction, measurements
from ganforge.sweep.options import SweepOptions
from ganforge.sweep.study import record_study, trial_environment, trial_folder


def _record(kimg: str, results: dict) -> str:
    return json.dumps({"snapshot": f"run/snapshots/network-snapshot-{kimg}.safetensors", "results": results})


def test_measurements_are_read_in_order_and_a_line_still_being_written_waits(tmp_path):
    lines = [_record("000000.000", {"swd16k_8": 5.0, "swd16k_avg": 4.0}), _record("000000.016", {"swd16k_avg": 3.5}),
             _record("000001", {"swd16k_avg": "oops"})]  # fmt: skip
    (tmp_path / "metric-swd16k.jsonl").write_text("\n".join(lines) + '\n{"snapshot": "run/snaps')
    found = measurements(tmp_path, "swd16k")
    assert found[:2] == [(0, 4.0), (16, 3.5)] and found[2][0] == 1000 and found[2][1] != found[2][1]  # NaN
    (tmp_path / "metric-kid50k_full.jsonl").write_text(_record("000012", {"kid50k_full": 0.02}) + "\n")
    assert measurements(tmp_path, "kid50k_full") == [(12000, 0.02)]
    assert measurements(tmp_path / "none", "kid50k_full") == []


def test_distances_are_minimised_and_scores_maximised():
    assert [direction(n) for n in ("kid50k_full", "fid50k_full", "swd16k", "is50k", "eqt50k_int")] == [
        "minimize", "minimize", "minimize", "maximize", "maximize"]  # fmt: skip


def test_parallel_trials_on_a_cpu_split_its_threads(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "8")
    options = SweepOptions(data="d", outdir="o", parallel=3)
    assert trial_environment(options, "cpu")["OMP_NUM_THREADS"] == "2"
    assert trial_environment(SweepOptions(data="d", outdir="o", parallel=16), None)["OMP_NUM_THREADS"] == "1"
    assert trial_environment(options, "cuda:1")["OMP_NUM_THREADS"] == "8"  # a GPU trial keeps what it was given


def test_the_study_record_has_the_storage_without_its_password(tmp_path):
    options = SweepOptions(data="d", outdir=str(tmp_path), kimg=5.0, storage="postgresql://ann:pa55@db.lab/s")
    record_study(tmp_path, options, options.storage, ())
    record = json.loads((tmp_path / "sweep.json").read_text())
    assert record["storage"] == "postgresql://db.lab/s" and record["train"] == {"--data": "d", "--cfg": None,
                                                                                "--kimg": 5.0}  # fmt: skip


def test_a_trials_folder_is_its_number_or_the_number_it_continues_never_a_path_from_the_database():
    study = optuna.create_study()
    for attrs in ({}, {"folder": "00003"}, {"folder": "../../etc"}, {"folder": ["x"]}, {"folder": "/tmp/x"}):
        study.enqueue_trial({}, user_attrs=attrs)
    folders = [trial_folder(study.ask()) for _ in range(5)]
    assert folders == ["00000", "00003", "00002", "00003", "00004"]


def test_only_a_lost_race_to_create_the_tables_is_tried_again():
    """Two sweeps opening an empty PostgreSQL database at once: the second CREATE breaks a unique constraint of the
    catalogue (or finds the table there); that open is tried again, any other failure is the one line at once."""
    import sqlalchemy.exc

    from ganforge.sweep.storage import _lost_schema_race

    def failure(kind, message):
        return kind("CREATE TABLE studies", {}, Exception(message))

    assert _lost_schema_race(failure(sqlalchemy.exc.IntegrityError, "duplicate key value violates unique constraint"))
    assert _lost_schema_race(failure(sqlalchemy.exc.ProgrammingError, 'relation "studies" already exists'))
    assert not _lost_schema_race(failure(sqlalchemy.exc.ProgrammingError, "permission denied for schema public"))
    assert not _lost_schema_race(failure(sqlalchemy.exc.OperationalError, "connection refused"))
    assert not _lost_schema_race(ValueError("unknown scheme"))


def test_an_open_that_lost_the_race_is_tried_again_and_another_failure_is_not(monkeypatch, tmp_path):
    import optuna
    import sqlalchemy.exc

    from ganforge.errors import UserError
    from ganforge.sweep import storage

    calls, real = [], optuna.storages.RDBStorage

    def losing_once(url, **kwargs):  # the other sweep's CREATE commits between the two tries
        calls.append(url)
        if len(calls) == 1:
            raise sqlalchemy.exc.IntegrityError("CREATE TABLE studies", {}, Exception("duplicate key value"))
        return real(url, **kwargs)

    monkeypatch.setattr(storage, "SCHEMA_RACE_TRIES", 3)
    monkeypatch.setattr(storage.time, "sleep", lambda seconds: None)
    monkeypatch.setattr(optuna.storages, "RDBStorage", losing_once)
    url = storage.default_storage(tmp_path)
    assert isinstance(storage.open_storage(url), real) and len(calls) == 2
    calls.clear()

    def refused(url, **kwargs):
        calls.append(url)
        raise sqlalchemy.exc.OperationalError("connect", {}, Exception("connection refused"))

    monkeypatch.setattr(optuna.storages, "RDBStorage", refused)
    with pytest.raises(UserError, match="cannot open the study's database"):
        storage.open_storage(url)
    assert len(calls) == 1
