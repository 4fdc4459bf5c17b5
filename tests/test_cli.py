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


def test_unknown_subcommand_exits_2_without_traceback():
    proc = subprocess.run([sys.executable, "-m", "ganforge", "no-such-command"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "no-such-command" in proc.stderr
