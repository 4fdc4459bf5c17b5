"""What the user gets wrong gives one line and exit status 2, before anything is trained or written: a bad space,
an option `train` does not have, NaN bounds, a metric with no single value, an unreachable storage (whose password
is not shown), more parallel trials than GPUs."""

import pytest
from click.testing import CliRunner
from sweep_helpers import make_dataset, sweep_args

from ganforge.cli import main


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("sweep-errors") / "data", count=8, res=8)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--space", "gamma=log:0..1"], "--space 'gamma=log:0..1': log: needs LOW > 0"),
        (["--space", "gamma=nan..1"], "--space 'gamma=nan..1': 'nan' is not a finite number"),
        (["--space", "warp-speed=1..9"], "`ganforge train` has no option --warp-speed"),
        (["--space", "outdir=x"], "--outdir is set by the sweep for every trial"),
        (["--metric", "pr50k3_full"], "--metric pr50k3_full: gives two values"),
        (["--metric", "nonsense"], "--metric 'nonsense': unknown"),
        (["--storage", "postgresql://ann:pa55word@127.0.0.1:1/sweeps"], "--storage postgresql://127.0.0.1:1/sweeps"),
        (["--storage", "nosuchdb://x/y"], "--storage nosuchdb://x/y: cannot open the study's database"),
    ],
)
def test_a_bad_sweep_is_one_line_and_exit_status_2(data, tmp_path, extra, message):
    result = CliRunner().invoke(main, sweep_args(data, tmp_path / "sweep", 2) + extra)
    assert result.exit_code == 2, result.output
    assert result.output.count("error: ") == 1 and message in result.output and "pa55word" not in result.output
    assert not (tmp_path / "sweep" / "trials").exists()


@pytest.mark.parametrize("study", ["{not json", "[]", '{"trials": 7, "best": null, "importances": "", "written": ""}'])
def test_a_damaged_sweep_folder_is_one_line_from_report(tmp_path, study):
    (tmp_path / "sweep.json").write_text('{"study": "s", "storage": "sqlite:///x", "metric": "kid50k_full"}')
    (tmp_path / "study.json").write_text(study)
    result = CliRunner().invoke(main, ["report", str(tmp_path)])
    assert result.exit_code == 2 and result.output.count("error: ") == 1, result.output
    assert "rerun the sweep" in result.output and not (tmp_path / "report.html").exists()
