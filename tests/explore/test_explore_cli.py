"""`ganforge explore`'s own bad input is one error line and exit 2: no network, a network that is not one, a bad
--port or --host, --latents that are neither file nor folder, the server's packages missing."""

import pytest
from click.testing import CliRunner
from explore_helpers import tiny_networks

from ganforge.cli import main
from ganforge.errors import UserError
from ganforge.explore import hosts, serve, server


def _explore(*args: str):
    return CliRunner().invoke(main, ["explore", *args, "--device", "cpu"])


@pytest.mark.parametrize(
    "args, message",
    [
        ((), "Missing option '--network'"),
        (("--network", "missing.safetensors"), "missing.safetensors: no such file"),
        (("--network", "NET", "--port", "nan"), "'nan' is not a valid integer"),
        (("--network", "NET", "--port", "70000"), "--port 70000: must be from 0 to 65,535"),
        (("--network", "RUN"), "a folder with neither snapshots/network-snapshot-*.safetensors nor checkpoints"),
        (("--network", "NET", "--host", "no-such-host.invalid"), "--host no-such-host.invalid: not an address"),
        (("--network", "NET", "--latents", "gone.npz"), "--latents gone.npz: no such file or folder; give a projected"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message, tmp_path):
    net = tiny_networks(tmp_path)["sg3"] if "NET" in args else None
    args = [str(net) if a == "NET" else str(tmp_path) if a == "RUN" else a for a in args]
    result = _explore(*args)
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert result.output.count("error:") == 1


def test_python_callers_meet_the_checks_of_the_command_line(tmp_path):
    """Before a network is read: a port beyond 65535 would otherwise reach getaddrinfo, which serves it modulo 2^16."""
    with pytest.raises(UserError) as err:
        serve([tmp_path / "missing.safetensors"], "127.0.0.1", 70000, "bogus")
    assert err.value.problems == [
        "--port 70000: must be from 0 to 65,535",
        "--device bogus: unknown; use one of auto, cuda, cpu",
    ]


def test_without_the_extra_it_says_what_to_install(monkeypatch, tmp_path):
    real = server.importlib.util.find_spec
    monkeypatch.setattr(server.importlib.util, "find_spec", lambda name: None if name == "uvicorn" else real(name))
    result = _explore("--network", str(tmp_path))
    assert result.exit_code == 2
    assert "error: ganforge explore needs uvicorn: pip install 'ganforge[explore]'" in result.output


def test_a_loopback_host_needs_no_token_and_others_do():
    assert hosts.is_loopback("127.0.0.1") and hosts.is_loopback("::1") and hosts.is_loopback("localhost")
    assert not any(hosts.is_loopback(h) for h in ("0.0.0.0", "192.168.1.2", "example.com", "::"))


def test_a_host_header_must_name_the_server():
    """What each bind admits: never a name a web page may own (evil.example), whatever the port or the spelling."""
    loopback = hosts.ServedNames.of(("127.0.0.1", "127.0.0.1"))
    admitted = ("127.0.0.1:8000", "localhost", "LOCALHOST:1", "[::1]:80", "[0:0:0:0:0:0:0:1]", "127.0.0.5")
    refused = ("evil.example", "evil.example:8000", "192.168.1.1", "evil.example@127.0.0.1", "localhost.", "", None)
    assert all(map(loopback.admits, admitted)) and not any(map(loopback.admits, refused))
    assert not loopback.admits("127.0.0.1:80:80") and not loopback.admits("[::1")
    everywhere = hosts.ServedNames.of(("0.0.0.0", "0.0.0.0"), ("Explore.Example",))
    assert all(map(everywhere.admits, ("192.0.2.7:8000", "[2001:db8::1]", "0.0.0.0", "localhost", "explore.example")))
    assert not any(map(everywhere.admits, ("evil.example", "explore.example.evil.example", "example")))
    named = hosts.ServedNames.of(("gpu-box.lan", "192.168.1.5"))
    assert named.admits("gpu-box.lan:9") and named.admits("192.168.1.5") and not named.admits("192.168.1.6")
    assert not named.admits("localhost")


@pytest.mark.parametrize("name", ["", "a b", "evil.example/x", "-x", "x" * 300])
def test_an_allowed_host_that_is_no_host_name_is_one_error_line(name, tmp_path):
    result = _explore("--network", str(tmp_path), "--allowed-host", name)
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error: --allowed-host {name[:57]}") and "not a host name" in result.output
    assert "Traceback" not in result.output and result.output.count("\n") == 1
