"""Errors about a dataset start with what the user passed: `--data`, `--real`, `--fake`, or the bare PATH of the
`dataset` commands, however deep the problem was found (a DataLoader worker included)."""

import subprocess
import sys
import zipfile

import pytest

from launch_helpers import tiny_archive


@pytest.fixture(scope="module")
def archives(tmp_path_factory):
    """A good archive and a copy with one member cut short (its zip directory intact)."""
    root = tmp_path_factory.mktemp("archives")
    good = tiny_archive(root)
    damaged = root / "damaged.zip"
    with zipfile.ZipFile(good) as source, zipfile.ZipFile(damaged, "w") as target:
        for info in source.infolist():
            data = source.read(info.filename)
            target.writestr(info, data[:40] if info.filename.endswith("05.png") else data)
    return good, damaged


def _ganforge(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ganforge", *map(str, args)], capture_output=True, text=True)


def test_dataset_commands_name_their_path_argument_not_a_flag(tmp_path, archives):
    for command in ("info", "verify"):
        done = _ganforge("dataset", command, tmp_path / "nope.zip")
        assert done.returncode == 2 and done.stderr == f"error: {tmp_path / 'nope.zip'} does not exist\n", done.stderr
    done = _ganforge("dataset", "verify", archives[1])
    assert done.returncode == 2 and done.stderr.startswith(f"error: {archives[1]}/"), done.stderr
    assert "--data" not in done.stderr


def test_a_bad_file_read_by_a_loader_worker_is_one_line_naming_the_flag(archives):
    good, damaged = archives
    done = _ganforge("metrics", "--real", good, "--fake", damaged, "--metrics", "swd16k", "--workers", "2")
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert done.returncode == 2 and "Traceback" not in done.stderr and "Caught" not in done.stderr, done.stderr
    assert len(errors) == 1 and errors[0].startswith(f"error: --fake: {damaged}/") and "05.png" in errors[0]
