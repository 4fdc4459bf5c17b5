"""`ganforge checkpoint verify` and `ganforge checkpoint diff`."""

import shutil

import torch
from checkpoint_helpers import resave
from click.testing import CliRunner

from ganforge import checkpoint
from ganforge.checkpoint.inspect import diff
from ganforge.cli import main


def test_verify_lists_each_checkpoint_and_fails_on_a_damaged_one(tiny_run, tmp_path):
    run = shutil.copytree(tiny_run[1], tmp_path / "00000-run")
    result = CliRunner().invoke(main, ["checkpoint", "verify", str(run)])
    assert result.exit_code == 0, result.output
    assert "ok: " in result.output and "ckpt-000000000 (0 kimg)" in result.output and "(0.008 kimg)" in result.output

    newest = run / "checkpoints" / "ckpt-000000008"
    data = (newest / "tensors.safetensors").read_bytes()
    (newest / "tensors.safetensors").write_bytes(data[:-10])
    result = CliRunner().invoke(main, ["checkpoint", "verify", str(newest)])
    assert result.exit_code == 2
    assert "ckpt-000000008: tensors.safetensors has" in result.stderr and "truncated" in result.stderr
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.output
    result = CliRunner().invoke(main, ["checkpoint", "verify", str(run)])
    assert result.exit_code == 2 and "1 of 2 checkpoints do not verify; resuming skips them" in result.stdout
    assert result.stderr.count("error: ") == 1, result.stderr


def test_verify_takes_a_copied_checkpoint_under_any_name_and_checks_it_as_one(tiny_run, tmp_path):
    copy = shutil.copytree(tiny_run[1] / "checkpoints" / "ckpt-000000008", tmp_path / "backup of step 8")
    result = CliRunner().invoke(main, ["checkpoint", "verify", str(copy)])
    assert result.exit_code == 0 and result.output == f"ok: {copy} (0.008 kimg)\n", result.output
    (copy / "state.json").write_bytes((copy / "state.json").read_bytes().replace(b"cur_tick", b"cur_tock"))
    result = CliRunner().invoke(main, ["checkpoint", "verify", str(copy)])
    assert result.exit_code == 2 and result.stderr.count("error: ") == 1, result.output
    assert f"checkpoint {copy}: state.json does not match its SHA-256" in result.stderr


def test_verify_of_what_is_no_checkpoint_says_what_it_expected_in_one_line(tmp_path):
    (tmp_path / "notes.txt").write_text("not a checkpoint")
    expected = "pass a checkpoint folder (one with a manifest.json), a run's checkpoints/ folder or a run folder"
    folder = "neither a checkpoint (no manifest.json) nor a folder of checkpoints (no ckpt-* folders in it or in its "
    cases = [
        (tmp_path, folder + "checkpoints/)"),
        (tmp_path / "notes.txt", "a file, not a checkpoint folder"),
        (tmp_path / "missing", "no such file or folder"),
    ]
    for path, why in cases:
        result = CliRunner().invoke(main, ["checkpoint", "verify", str(path)])
        assert result.exit_code == 2 and result.output == f"error: {path}: {why}; {expected}\n", result.output


def test_diff_compares_copied_checkpoints_under_any_name(tiny_run, tmp_path):
    checkpoints = tiny_run[1] / "checkpoints"
    first = shutil.copytree(checkpoints / "ckpt-000000000", tmp_path / "start")
    second = shutil.copytree(checkpoints / "ckpt-000000008", tmp_path / "after one tick")
    result = CliRunner().invoke(main, ["checkpoint", "diff", str(first), str(second), "--limit", "1000"])
    assert result.exit_code == 1 and "loop/cur_nimg: 0 -> 8" in result.output.splitlines(), result.output


def test_diff_of_identical_checkpoints_exits_0(tiny_run, tmp_path):
    first = tiny_run[1] / "checkpoints" / "ckpt-000000008"
    second = shutil.copytree(first, tmp_path / "ckpt-000000008")
    result = CliRunner().invoke(main, ["checkpoint", "diff", str(first), str(second)])
    assert result.exit_code == 0 and result.output.startswith("identical: "), result.output


def test_diff_names_tensors_with_their_max_difference_and_fields_with_both_values(tiny_run, tmp_path):
    first = tiny_run[1] / "checkpoints" / "ckpt-000000008"
    state = checkpoint.load(first)
    state["G"]["mapping.fc0.weight"][0, 0] += 0.25
    state["loop"]["nonfinite_in_a_row"] = 4
    second = resave(state, tmp_path, 8)
    result = CliRunner().invoke(main, ["checkpoint", "diff", str(first), str(second)])
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    total = state["G"]["mapping.fc0.weight"].numel()
    assert f"G/mapping.fc0.weight: max abs difference 0.25 (1 of {total} values differ)" in lines, lines
    assert "loop/nonfinite_in_a_row: 0 -> 4" in lines
    assert lines[-1].startswith("2 entries differ between ")


def test_diff_compares_only_checkpoints_a_resume_accepts(tiny_run, tmp_path):
    first = tiny_run[1] / "checkpoints" / "ckpt-000000008"
    state = checkpoint.load(first)
    del state["rng"]
    second = resave(state, tmp_path, 8)
    result = CliRunner().invoke(main, ["checkpoint", "diff", str(first), str(second)])
    assert result.exit_code == 2 and result.stderr.count("error: ") == 1, result.output
    assert "ckpt-000000008: state.json: the state: has no 'rng'" in result.stderr


def test_diff_treats_equal_nans_as_equal_and_reports_dtype_changes():
    assert diff({"x": torch.tensor([float("nan"), 1.0])}, {"x": torch.tensor([float("nan"), 1.0])}) == []
    assert diff({"f": float("nan")}, {"f": float("nan")}) == []
    (change,) = diff({"x": torch.zeros(2)}, {"x": torch.zeros(2, dtype=torch.float64)})
    assert change.description == "torch.float32[2] -> torch.float64[2]"
    (change,) = diff({"n": torch.tensor([1, 2, 3])}, {"n": torch.tensor([1, 5, 3])})
    assert change.description == "1 of 3 values differ"
