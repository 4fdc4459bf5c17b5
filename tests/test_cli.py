import subprocess
import sys

from click.testing import CliRunner

from ganforge import __version__
from ganforge.cli import main


def test_version_and_help():
    runner = CliRunner()
    result = runner.invoke(main, ["--version"])
    assert result.exit_code == 0
    assert __version__ in result.output
    result = runner.invoke(main, ["--help"])
    assert result.exit_code == 0
    assert "Usage" in result.output


def test_bare_ganforge_prints_the_help_and_succeeds():
    result = CliRunner().invoke(main, [])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("Usage:") and "train" in result.output and "Commands:" in result.output


def test_unknown_subcommand_exits_2_without_traceback():
    proc = subprocess.run([sys.executable, "-m", "ganforge", "no-such-command"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "no-such-command" in proc.stderr


def test_warnings_are_one_line_without_source_and_user_errors_exit_2():
    import warnings

    import click

    from ganforge.cli import _Group
    from ganforge.errors import UserError

    @click.group(cls=_Group)
    def group():
        pass

    @group.command()
    def warn_then_fail():
        for _ in range(2):  # the same text twice (two metrics about one input, say) is shown once
            warnings.warn("skipping checkpoint ckpt-000000016: manifest.json missing", UserWarning, stacklevel=1)
        warnings.warn("skipping checkpoint ckpt-000000008: manifest.json missing", UserWarning, stacklevel=1)
        raise UserError("--data: first problem", "--batch: second problem")

    result = CliRunner().invoke(group, ["warn-then-fail"])
    assert result.exit_code == 2
    lines = result.output.splitlines()
    assert lines == [
        "warning: skipping checkpoint ckpt-000000016: manifest.json missing",
        "warning: skipping checkpoint ckpt-000000008: manifest.json missing",
        "error: --data: first problem",
        "error: --batch: second problem",
    ]
