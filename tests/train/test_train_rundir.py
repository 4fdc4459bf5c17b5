"""Which run folder a command writes to: continue a checkpointed run, reuse one that never started, or a new one."""

import dataclasses
import json
import os
import shutil
from pathlib import Path

import pytest
from train_helpers import make_dataset, tiny_options

from ganforge.errors import UserError
from ganforge.train import logs, resolve, rundir
from ganforge.train.resume import choose_source, find_sources


def _continued(cfg) -> Path | None:
    """The run folder `cfg` continues by the rule, or None for a new run."""
    chosen = rundir.choose_run(cfg, rundir.matching_runs(rundir.RunKey.of(cfg)))
    return None if chosen is None else Path(chosen.path)


def _start(cfg, checkpointed: bool):
    """What select_run leaves behind for a new run: its folder and config.json; a checkpoint if it got that far."""
    run = rundir.create_run(cfg)
    rundir.write_config(run, cfg)
    if checkpointed:
        (run / "checkpoints" / "ckpt-000000000").mkdir(parents=True)
    return run


def test_a_run_that_never_reached_a_checkpoint_is_reused_by_the_same_command(tmp_path):
    data = make_dataset(tmp_path / "data")
    cfg = resolve(tiny_options(data, tmp_path / "runs"))
    first = _start(cfg, checkpointed=False)
    assert _continued(cfg) is None
    assert rundir.create_run(cfg) == first
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [first.name]


def test_a_different_command_or_a_started_run_gets_a_new_folder(tmp_path):
    data = make_dataset(tmp_path / "data")
    cfg = resolve(tiny_options(data, tmp_path / "runs"))
    first = _start(cfg, checkpointed=False)
    other = resolve(tiny_options(data, tmp_path / "runs", gamma=0.5))
    second = _start(other, checkpointed=True)
    assert second != first and second.name.startswith("00001-")
    assert _continued(other) == second  # rerunning `other` continues it
    fresh = resolve(tiny_options(data, tmp_path / "runs", gamma=0.5, resume="new"))
    assert rundir.create_run(fresh).name.startswith("00002-")  # the newest holds a checkpoint: never reused


def _damaged(text: bytes):
    return lambda path: path.write_bytes(text)


# config.json contents that no run writes: each must be named in one line, never a traceback.
DAMAGED = {
    "a list": _damaged(b"[]"),
    "truncated": _damaged(b'{"data": {"path": "x"'),
    "deeply nested": _damaged(b"[" * 100_000 + b"]" * 100_000),
    "wrong types": _damaged(b'{"data": {"path": 3}, "preset": "tiny", "run": {"resume": "auto"}}'),
    "a string for data": _damaged(b'{"data": "x", "preset": "tiny", "run": {"resume": "auto"}}'),
    "not UTF-8": _damaged(b'{"preset": "\xff"}'),
    "a huge number": _damaged(b"9" * 5000),
    "NaN": _damaged(b"NaN"),
    "larger than a config": lambda path: os.truncate(path, 2**31),  # sparse: takes no disk
    "a folder": lambda path: (path.unlink(), path.mkdir()),
    "a FIFO": lambda path: (path.unlink(), os.mkfifo(path)),
}


@pytest.fixture(scope="module")
def cfg(tmp_path_factory):
    root = tmp_path_factory.mktemp("rundir")
    return resolve(tiny_options(make_dataset(root / "data"), root / "runs"))


@pytest.mark.parametrize("damage", DAMAGED.values(), ids=DAMAGED.keys())
def test_a_damaged_config_of_the_run_to_continue_is_named_not_skipped(cfg, damage):
    """Skipping it would start the run over in silence; the user must restore it or say --resume new."""
    run = _start(cfg, checkpointed=True)
    try:
        damage(run / "config.json")
        with pytest.raises(UserError) as raised:
            _continued(cfg)
        (problem,) = raised.value.problems
        assert problem.startswith(f"{run / 'config.json'}: ") and "--resume new" in problem and len(problem) < 400
        with pytest.raises(UserError):  # chosen when the options are resolved, so --dry-run refuses it too
            choose_source(cfg, find_sources(rundir.RunKey.of(cfg)))
        assert _continued(dataclasses.replace(cfg, run=dataclasses.replace(cfg.run, resume="new"))) is None
    finally:
        shutil.rmtree(run)


def test_a_damaged_config_of_another_run_is_skipped_with_a_warning(cfg):
    mine = _start(cfg, checkpointed=True)
    other = Path(cfg.run.outdir) / "00009-faces-auto-gpus1-batch32"
    (other / "checkpoints" / "ckpt-000000000").mkdir(parents=True)
    (other / "config.json").write_text("[]")
    try:
        with pytest.warns(rundir.RunFolderWarning, match=f"skipping run folder {other}: config.json is not a run's"):
            assert _continued(cfg) == mine
    finally:
        shutil.rmtree(mine)
        shutil.rmtree(other)


def test_a_damaged_config_of_a_run_that_never_started_gets_a_new_folder(cfg):
    first = _start(cfg, checkpointed=False)
    (first / "config.json").write_text("[]")
    try:
        assert rundir.find_unstarted_run(cfg) is None
        second = rundir.create_run(cfg)
        assert second != first
        second.rmdir()
    finally:
        shutil.rmtree(first)


SIGNED = "http://reader:PLANTEDpassword@data.example/faces/?X-Amz-Date=20250101&X-Amz-Signature={}"


def test_a_url_is_recorded_public_and_the_url_signed_afresh_continues_the_run(cfg, tmp_path):
    """config.json holds --data's URL without its credentials and signature while the Config keeps the whole URL
    for the requests; the command rerun with the URL signed afresh (a presigned URL expires) is the same command, and
    so is it for a run whose config.json an older ganforge wrote with the whole URL."""

    def signed(signature: str):
        run = dataclasses.replace(cfg.run, outdir=str(tmp_path))
        return dataclasses.replace(cfg, data=dataclasses.replace(cfg.data, path=SIGNED.format(signature)), run=run)

    first = signed("PLANTEDsignature1")
    run = _start(first, checkpointed=True)
    recorded = (run / "config.json").read_text()
    assert '"path": "http://data.example/faces/?X-Amz-Date=REDACTED&X-Amz-Signature=REDACTED"' in recorded
    assert "PLANTED" not in recorded and first.data.path == SIGNED.format("PLANTEDsignature1")
    assert _continued(signed("PLANTEDsignature2")) == run
    (run / "config.json").write_text(json.dumps(dataclasses.asdict(first)))  # the whole URL, as recorded before
    assert _continued(signed("PLANTEDsignature2")) == run


def test_log_lines_and_a_failure_quote_urls_without_their_secrets(tmp_path, capsys):
    """What reaches log.txt and the terminal (a tracker's warning, a line for the log only, the traceback of a
    failure) names a URL as `public_url` shows it."""
    log = logs.RunLog(tmp_path, total_nimg=16, start_nimg=0)
    log.print("warning: mlflow: log_batch failed (ConnectionError: http://u:PLANTEDpassword@mlflow.example/api)")
    log.record("fetched http://data.example/x/?sig=PLANTEDsignature")
    log.close()
    rundir.record_failure(tmp_path, RuntimeError("GET https://PLANTEDtoken@data.example/x/index.json failed"))
    text = (tmp_path / "log.txt").read_text()
    assert "PLANTED" not in text + capsys.readouterr().out
    assert "(ConnectionError: http://mlflow.example/api)" in text and "?sig=REDACTED" in text
    assert "GET https://data.example/x/index.json failed" in text
