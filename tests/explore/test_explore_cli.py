"""`ganforge explore`'s own bad input is one error line and exit 2: no network, a network that is not one, a bad
--port or --host, the server's packages missing."""

import pytest
from click.testing import CliRunner
from explore_helpers import tiny_networks

from ganforge.cli import main
from ganforge.explore import server


def _explore(*args: str):
    return CliRunner().invoke(main, ["explore", *args, "--device", "cpu"])


@pytest.mark.parametrize(
    "args, message",
    [
        ((), "Missing option '--network'"),
        (("--network", "missing.safetensors"), "missing.safetensors: no such file"),
        (("--network", "NET", "--port", "nan"), "'nan' is not a valid integer"),
        (("--network", "NET", "--port", "70000"), "70000 is not in the range 0<=x<=65535"),
        (("--network", "RUN"), "a folder with neither snapshots/network-snapshot-*.safetensors nor checkpoints"),
        (("--network", "NET", "--host", "no-such-host.invalid"), "--host no-such-host.invalid: not an address"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message, tmp_path):
    net = tiny_networks(tmp_path)["sg3"] if "NET" in args else None
    args = [str(net) if a == "NET" else str(tmp_path) if a == "RUN" else a for a in args]
    result = _explore(*args)
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert result.output.count("error:") == 1


def test_without_the_extra_it_says_what_to_install(monkeypatch, tmp_path):
    real = server.importlib.util.find_spec
    monkeypatch.setattr(server.importlib.util, "find_spec", lambda name: None if name == "uvicorn" else real(name))
    result = _explore("--network", str(tmp_path))
    assert result.exit_code == 2
    assert "error: ganforge explore needs uvicorn: pip install 'ganforge[explore]'" in result.output


def test_a_loopback_host_needs_no_token_and_others_do():
    assert server.is_loopback("127.0.0.1") and server.is_loopback("::1") and server.is_loopback("localhost")
    assert not any(server.is_loopback(h) for h in ("0.0.0.0", "192.168.1.2", "example.com", "::"))
