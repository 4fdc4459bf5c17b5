"""One tiny real training run shared by the report tests."""

from pathlib import Path

import pytest
from click.testing import CliRunner
from report_helpers import make_dataset

from ganforge.cli import main


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory) -> Path:
    """A finished `ganforge train --cfg tiny` run: 2 ticks of 8 images, a snapshot and grid at every tick."""
    root = tmp_path_factory.mktemp("report_run")
    data = make_dataset(root / "squares")
    args = ["train", "--data", str(data), "--outdir", str(root / "runs"), "--cfg", "tiny", "--kimg", "0.016",
            "--batch", "8", "--tick", "0.008", "--snap", "1", "--workers", "0", "--device", "cpu",
            "--aug", "noaug"]  # fmt: skip
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (run,) = (root / "runs").iterdir()
    return run
