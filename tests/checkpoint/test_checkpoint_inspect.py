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


def test_verify_of_a_folder_without_checkpoints_is_a_user_error(tmp_path):
    result = CliRunner().invoke(main, ["checkpoint", "verify", str(tmp_path)])
    assert result.exit_code == 2 and "holds no checkpoint folders" in result.output


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
