"""`ganforge checkpoint verify` and `ganforge checkpoint diff`."""

import torch
from checkpoint_helpers import make_state
from click.testing import CliRunner

from ganforge import checkpoint
from ganforge.checkpoint.inspect import diff
from ganforge.cli import main


def _save(folder, state, nimg):
    return checkpoint.save(folder, state, tag=str(nimg), retention=checkpoint.Retention(keep_last=10))


def test_verify_lists_each_checkpoint_and_fails_on_a_damaged_one(tmp_path):
    run = tmp_path / "00000-run"
    _save(run / "checkpoints", make_state(1000), 1000)
    newest = _save(run / "checkpoints", make_state(2000), 2000)
    result = CliRunner().invoke(main, ["checkpoint", "verify", str(run)])
    assert result.exit_code == 0, result.output
    assert "ok: " in result.output and "ckpt-000001000 (1 kimg)" in result.output and "(2 kimg)" in result.output

    data = (newest / "tensors.safetensors").read_bytes()
    (newest / "tensors.safetensors").write_bytes(data[:-10])
    result = CliRunner().invoke(main, ["checkpoint", "verify", str(newest)])
    assert result.exit_code == 2
    assert "ckpt-000002000: tensors.safetensors has" in result.output and "truncated" in result.output
    assert "Traceback" not in result.output


def test_verify_of_a_folder_without_checkpoints_is_a_user_error(tmp_path):
    result = CliRunner().invoke(main, ["checkpoint", "verify", str(tmp_path)])
    assert result.exit_code == 2 and "holds no checkpoint folders" in result.output


def test_diff_of_identical_checkpoints_exits_0(tmp_path):
    a = _save(tmp_path / "a", make_state(1000), 1000)
    b = _save(tmp_path / "b", make_state(1000), 1000)
    result = CliRunner().invoke(main, ["checkpoint", "diff", str(a), str(b)])
    assert result.exit_code == 0 and result.output.startswith("identical: "), result.output


def test_diff_names_tensors_with_their_max_difference_and_fields_with_both_values(tmp_path):
    first, second = make_state(1000), make_state(1000)
    second["G"]["0.weight"] = second["G"]["0.weight"].clone()
    second["G"]["0.weight"][0, 0] += 0.25
    second["loop"]["cur_tick"] = 4
    second["extra"] = 1
    a, b = _save(tmp_path / "a", first, 1000), _save(tmp_path / "b", second, 1000)
    result = CliRunner().invoke(main, ["checkpoint", "diff", str(a), str(b)])
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert "G/0.weight: max abs difference 0.25 (1 of 32 values differ)" in lines
    assert "loop/cur_tick: 3 -> 4" in lines and "extra: only in the second" in lines
    assert lines[-1].startswith("3 entries differ between ")


def test_diff_treats_equal_nans_as_equal_and_reports_dtype_changes():
    assert diff({"x": torch.tensor([float("nan"), 1.0])}, {"x": torch.tensor([float("nan"), 1.0])}) == []
    assert diff({"f": float("nan")}, {"f": float("nan")}) == []
    (change,) = diff({"x": torch.zeros(2)}, {"x": torch.zeros(2, dtype=torch.float64)})
    assert change.description == "torch.float32[2] -> torch.float64[2]"
    (change,) = diff({"n": torch.tensor([1, 2, 3])}, {"n": torch.tensor([1, 5, 3])})
    assert change.description == "1 of 3 values differ"
