"""Which run a rerun continues: the run of the same command, else the newest of the same maths and data (saying
why), else a new one (naming a run left alone for its other maths); and --dry-run says which, without training.

Run folders are made as a started run leaves them (config.json, a checkpoint with its manifest), without training.
"""

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from train_helpers import make_dataset, tiny_args, tiny_options

from ganforge.checkpoint.store import FORMAT, FORMAT_VERSION, MANIFEST, STATE, TENSORS
from ganforge.cli import main
from ganforge.errors import UserError
from ganforge.train import resolve, rundir
from ganforge.train.resolver import observe, resolve_run


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> Path:
    return make_dataset(tmp_path_factory.mktemp("run_choice") / "squares")


def _started(cfg, nimg: int = 16) -> Path:
    """A run folder of `cfg` with one checkpoint whose manifest reads (its files are not needed to choose)."""
    run = rundir.create_run(cfg)
    rundir.write_config(run, cfg)
    ckpt = run / "checkpoints" / f"ckpt-{nimg:09d}"
    ckpt.mkdir(parents=True)
    files = {name: {"sha256": hashlib.sha256(b"").hexdigest(), "size": 0} for name in (TENSORS, STATE)}
    manifest = {"format": FORMAT, "format_version": FORMAT_VERSION, "name": ckpt.name, "nimg": nimg, "files": files}
    (ckpt / MANIFEST).write_text(json.dumps(manifest))
    return run


def _choice(options):
    """(run folder or None, why) that resolving `options` chooses."""
    _, source = resolve_run(options, observe(options))
    return (Path(source.path) if source.kind == "continue" else None), source.why


def test_a_rerun_continues_its_own_command_before_a_newer_run_of_the_same_maths(data, tmp_path):
    """The case a new user met: run 1 (other --kimg and monitor flags, same maths) is newer, but rerunning the
    command of run 0 continues run 0."""
    outdir = tmp_path / "runs"
    first = tiny_options(data, outdir, kimg=0.032)
    run0 = _started(resolve(first))
    run1 = _started(resolve(tiny_options(data, outdir, kimg=0.064, monitor_interval=0, resume="new")))
    assert _choice(first) == (run0, "same command")
    assert _choice(dataclasses.replace(first, monitor_interval=0.0, resume="new", kimg=0.064))[0] is None
    path, why = _choice(tiny_options(data, outdir, kimg=0.08))  # no run of this command: the newest of its maths
    assert path == run1 and why.startswith("same training maths and data; its last command differed in ")
    for change in ("--monitor-interval 0 (now 2)", "--kimg 0.064 (now 0.08)", "--resume new (now auto)"):
        assert change in why, why


def test_other_maths_start_a_new_run_and_name_the_run_left_alone(data, tmp_path):
    outdir = tmp_path / "runs"
    run0 = _started(resolve(tiny_options(data, outdir)))
    changed = tiny_options(data, outdir, gamma=3, dlr=0.001)
    path, why = _choice(changed)
    assert path is None and why == (
        f"{run0} trained the same data and --cfg with other maths (--gamma 0.05 (now 3), --dlr 0.0025 (now 0.001)); "
        f"to continue it with these values, pass --resume {run0} --allow-config-change"
    )
    path, why = _choice(dataclasses.replace(changed, allow_config_change=True))
    assert path == run0 and why.startswith("newest of this data and --cfg, --allow-config-change: --gamma 0.05")
    other_data = make_dataset(tmp_path / "circles")
    assert _choice(tiny_options(other_data, outdir)) == (None, "")  # another --data: nothing to say about run0


def test_a_run_of_other_widths_is_never_continued_nor_offered(data, tmp_path):
    """--cbase changes the networks' shapes, which no --allow-config-change can load: a new run, no advice to
    continue the old one; the older run of the same widths is the one --allow-config-change continues."""
    outdir = tmp_path / "runs"
    same_widths = _started(resolve(tiny_options(data, outdir, gamma=3)))
    _started(resolve(tiny_options(data, outdir, cbase=256, resume="new")))
    wider = tiny_options(data, outdir, cbase=1024)
    assert _choice(wider) == (None, "")
    path, why = _choice(tiny_options(data, outdir, allow_config_change=True))
    assert path == same_widths and why.endswith("--allow-config-change: --gamma 3 (now 0.05)"), why


def test_auto_precision_is_compared_as_continuing_makes_it(data, tmp_path):
    """A run whose --precision auto chose bf16 is this auto command's run even on hardware where auto picks fp32;
    a run given --precision explicitly is another command of the same maths."""
    outdir = tmp_path / "runs"
    auto = resolve(tiny_options(data, outdir))
    bf16 = dataclasses.replace(auto, precision=dataclasses.replace(auto.precision, mode="bf16", auto_reason="x"))
    run0 = _started(bf16)
    assert _choice(tiny_options(data, outdir)) == (run0, "same command")
    path, why = _choice(tiny_options(data, outdir, precision="bf16"))
    assert path == run0 and why.endswith("--precision auto (now given)")


def test_dry_run_says_which_run_and_why_or_which_new_folder(data, tmp_path):
    outdir = tmp_path / "runs"

    def dry_run(into: Path = outdir, **extra) -> str:
        result = CliRunner().invoke(main, [*tiny_args(data, into, **extra), "--dry-run"])
        assert result.exit_code == 0, result.output
        return result.stderr.splitlines()[-1]

    assert dry_run() == f"would start {outdir / '00000-squares-tiny-gpus1-batch8'}"
    assert not outdir.exists() or not list(outdir.iterdir())  # nothing made
    assert CliRunner().invoke(main, tiny_args(data, outdir)).exit_code == 0  # a real run: the dry run loads its last
    run0 = outdir / "00000-squares-tiny-gpus1-batch8"  # checkpoint and checks it, as continuing it would
    assert dry_run() == f"would continue {run0} from ckpt-000000032 at 0.032 kimg (same command)"
    assert dry_run(kimg=0.64).endswith("at 0.032 kimg (same training maths and data; its last command differed in "
                                       "--kimg 0.032 (now 0.64))")  # fmt: skip
    assert dry_run(resume="new") == f"would start {outdir / '00001-squares-tiny-gpus1-batch8'}"
    assert dry_run(tmp_path / "other", resume=str(run0)).endswith("(the run --resume names)")


def test_a_run_folder_named_by_resume_with_a_damaged_config_is_one_line(data, tmp_path):
    run0 = _started(resolve(tiny_options(data, tmp_path / "runs")))
    (run0 / "config.json").write_text("[]")
    with pytest.raises(UserError) as raised:
        resolve(tiny_options(data, tmp_path / "runs", resume=str(run0)))
    (problem,) = raised.value.problems
    assert problem.startswith(f"--resume {run0}: its config.json is not a run's configuration")


def test_the_same_folders_spelled_another_way_are_the_same_command(data, tmp_path, monkeypatch):
    """--outdir and --resume PATH recorded as typed made `runs` and `/abs/runs` two commands, so rerunning run 0's
    command continued a newer run 1 of the same maths; they are recorded absolute, and --outdir is not compared (every
    run compared lies in it). A run recorded before, with relative paths, is read from the working directory."""
    monkeypatch.chdir(tmp_path)
    pkl = tmp_path / "start.safetensors"
    pkl.write_bytes(b"")  # --resume PATH is only compared here, never read
    relative = tiny_options(data, Path("runs"), kimg=0.032)
    run0 = _started(resolve(relative))
    run1 = _started(resolve(tiny_options(data, Path("runs"), kimg=0.064, resume="new")))
    absolute = tiny_options(data, tmp_path / "runs", kimg=0.032)
    assert _choice(absolute) == (tmp_path / run0, "same command")
    assert _choice(dataclasses.replace(absolute, outdir="./runs/")) == (tmp_path / run0, "same command")
    assert resolve(relative).run.outdir == str(tmp_path / "runs")
    recorded = json.loads((run1 / "config.json").read_text())
    recorded["run"] |= {"outdir": "runs", "resume": "start.safetensors"}  # as a run started before recorded them
    (run1 / "config.json").write_text(json.dumps(recorded))
    config, _ = rundir.read_config(run1)
    cfg = resolve(tiny_options(data, tmp_path / "runs", kimg=0.064))
    cfg = dataclasses.replace(cfg, run=dataclasses.replace(cfg.run, resume=str(pkl)))
    assert rundir.command_changes(config, cfg) == []
    key = dataclasses.replace(rundir.RunKey.of(cfg), resume=str(pkl))
    assert [Path(found.path) for found in rundir.matching_runs(key)] == [tmp_path / run1]
