"""Which run folder a command writes to: continue a checkpointed run, reuse one that never started, or a new one."""

from train_helpers import make_dataset, tiny_options

from ganforge.train import resolve, rundir


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
    assert rundir.find_run(cfg) is None
    assert rundir.create_run(cfg) == first
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == [first.name]


def test_a_different_command_or_a_started_run_gets_a_new_folder(tmp_path):
    data = make_dataset(tmp_path / "data")
    cfg = resolve(tiny_options(data, tmp_path / "runs"))
    first = _start(cfg, checkpointed=False)
    other = resolve(tiny_options(data, tmp_path / "runs", gamma=0.5))
    second = _start(other, checkpointed=True)
    assert second != first and second.name.startswith("00001-")
    assert rundir.find_run(other) == second  # rerunning `other` continues it
    fresh = resolve(tiny_options(data, tmp_path / "runs", gamma=0.5, resume="new"))
    assert rundir.create_run(fresh).name.startswith("00002-")  # the newest holds a checkpoint: never reused
