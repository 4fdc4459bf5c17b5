"""`ganforge explore` under slow and idle clients: the real uvicorn server of explore, run in this process on
loopback with small limits (8 connections, a 1 s read deadline, a 0.5 s burst window) so that what the defaults do
to 2,000 clients in minutes shows here in a few seconds (benchmarks/explore_slow_clients.py measures the defaults).
Connections above the cap close the oldest waiting ones at once, half-sent requests end at the read deadline, a
normal request is answered meanwhile, and each burst of refusals is one log line."""

import asyncio
import contextlib
import re
import signal
import socket
import threading
import time
import urllib.request

import pytest
import torch
from explore_helpers import tiny_networks

from ganforge.errors import UserError
from ganforge.explore import connections
from ganforge.explore.app import Explorer
from ganforge.explore.connections import ConnectionLimits, loop_exception_handler
from ganforge.explore.hosts import ServedNames
from ganforge.explore.networks import load_networks
from ganforge.explore.rejections import Rejections
from ganforge.explore.server import bind, run_server, web_server
from ganforge.explore.stopping import stopped_by_signals

LIMITS = ConnectionLimits(cap=8, read_deadline_s=1.0)
HALF_REQUEST = b"GET /api/networks HTTP/1.1\r\nHost: 127.0.0.1\r\n"


@pytest.fixture(scope="module")
def explorer(tmp_path_factory):
    nets = tiny_networks(tmp_path_factory.mktemp("explore-connections"))
    device = torch.device("cpu")
    return Explorer(load_networks([nets["sg3"]], device), device)


@contextlib.contextmanager
def serving(explorer):
    """explore's server on 127.0.0.1 in a thread, with LIMITS -> (its port, the lines it logged; the last one on the
    way out, as `serve` writes it when it stops)."""
    sock = bind("127.0.0.1", 0)
    lines = []
    rejections = Rejections(window_s=0.5, write=lines.append)
    server = web_server(explorer, sock, ServedNames.of(("127.0.0.1",)), None, LIMITS, rejections)
    thread = threading.Thread(target=asyncio.run, args=(run_server(server, sock, rejections),))
    thread.start()
    try:
        while not server.started:
            time.sleep(0.01)
        yield sock.getsockname()[1], lines
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
        rejections.flush()


def _half_sent(port: int, count: int) -> list[socket.socket]:
    clients = []
    for _ in range(count):
        client = socket.create_connection(("127.0.0.1", port), timeout=5)
        client.sendall(HALF_REQUEST)
        clients.append(client)
    return clients


def _closed_by_server(client: socket.socket, wait_s: float) -> bool:
    """Does the server close `client` within `wait_s` seconds (what it still sends on the way is read and dropped)?"""
    deadline = time.monotonic() + wait_s
    try:
        while (left := deadline - time.monotonic()) > 0:
            client.settimeout(left)
            if client.recv(65536) == b"":
                return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        pass
    return False


def _counted(lines: list[str], reason: str) -> int:
    """How many refusals for `reason` the summary lines count, all together."""
    found = re.findall(r"([0-9,]+) " + re.escape(reason), "\n".join(lines))
    return sum(int(count.replace(",", "")) for count in found)


def _normal_request_seconds(port: int) -> float:
    start = time.perf_counter()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/networks", timeout=10) as response:
        assert response.status == 200 and response.read().startswith(b"[")
    return time.perf_counter() - start


def test_slow_clients_are_shed_and_a_normal_request_is_answered(explorer):
    with serving(explorer) as (port, lines):
        slow = _half_sent(port, 30)
        # the 22 oldest were closed as newer ones came: at most 8 are open, and none waits for the deadline
        early = [client for client in slow[:22] if _closed_by_server(client, 0.5)]
        assert len(early) == 22
        assert _normal_request_seconds(port) < 2  # it closes the oldest of the 8 half-sent ones
        assert all(_closed_by_server(client, 2.0) for client in slow[23:])  # the read deadline: 1 s
        for client in slow:
            client.close()
    assert 2 <= len(lines) <= 3, lines  # a line per burst of 0.5 s: the evictions, then the deadline
    assert _counted(lines, "idle or half-sent connections closed for newer ones (at most 8 open)") == 23
    assert _counted(lines, "connections closed that sent no whole request in 1 s") == 7
    assert all("\n" not in line and "Traceback" not in line for line in lines)


def test_a_connection_sending_part_of_its_next_request_is_closed_at_the_deadline(explorer):
    """uvicorn's keep-alive timer stops at the first byte of a next request; the read deadline does not."""
    with serving(explorer) as (port, lines), socket.create_connection(("127.0.0.1", port), timeout=5) as client:
        client.sendall(HALF_REQUEST + b"\r\n")
        assert client.recv(65536).startswith(b"HTTP/1.1 200 ")
        client.sendall(b"G")
        start = time.monotonic()
        assert _closed_by_server(client, 3.0)
        assert 0.9 < time.monotonic() - start < 2.0
    assert _counted(lines, "connections closed that sent no whole request in 1 s") == 1


def test_when_every_connection_has_a_request_in_progress_a_new_one_gets_503(explorer):
    with serving(explorer) as (port, lines):
        with explorer.render_lock:  # image requests wait for it: 8 connections busy
            busy = []
            for seed in range(LIMITS.cap):
                client = socket.create_connection(("127.0.0.1", port), timeout=5)
                client.sendall(f"GET /api/image?seed={seed} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
                busy.append(client)
            time.sleep(0.3)
            with socket.create_connection(("127.0.0.1", port), timeout=5) as refused:
                assert refused.recv(4096).startswith(b"HTTP/1.1 503 Service Unavailable\r\n")
        for client in busy:  # then every one of them is answered
            assert client.recv(65536).startswith(b"HTTP/1.1 200 ")
            client.close()
        with socket.create_connection(("127.0.0.1", port), timeout=5) as garbage:
            garbage.sendall(b"\x16\x03\x01 not http\r\n\r\n")
            assert garbage.recv(4096).startswith(b"HTTP/1.1 400 ")
    assert _counted(lines, "connections refused (503): all 8 had a request in progress") == 1
    assert _counted(lines, "invalid HTTP requests refused (400)") == 1


def test_accept_failing_for_want_of_descriptors_is_counted_not_logged(caplog):
    lines = []

    async def fail_accepts():
        loop = asyncio.get_running_loop()
        rejections = Rejections(window_s=0.1, write=lines.append)
        loop.set_exception_handler(loop_exception_handler(rejections))
        error = OSError(24, "Too many open files")
        for _ in range(1000):
            loop.call_exception_handler({"message": connections.ACCEPT_FAILED, "exception": error})
        loop.call_exception_handler({"message": "something else", "exception": ValueError("kept")})
        await asyncio.sleep(0.2)

    asyncio.run(fail_accepts())
    assert lines == ["ganforge explore, the last 0 s: 1,000 connections not accepted: no file descriptor was free"]
    assert [record.getMessage() for record in caplog.records] == ["something else"]


def test_the_cap_stays_below_the_limit_on_open_files(monkeypatch):
    limits = {}

    def limit(soft, hard):
        monkeypatch.setattr(connections.resource, "getrlimit", lambda _: (soft, hard))
        monkeypatch.setattr(connections.resource, "setrlimit", lambda _, pair: limits.update(set=pair))

    others = connections.IN_FLIGHT_FILES + connections.RESERVED_FILES
    limit(1024, 1 << 20)  # the soft limit is raised for the whole cap
    assert connections.connection_cap() == connections.MAX_CONNECTIONS
    assert limits["set"] == (connections.MAX_CONNECTIONS + others, 1 << 20)
    limit(1024, 1024)  # it cannot be: fewer connections, said once
    with pytest.warns(UserWarning, match=f"ulimit -n 1024: serving at most {1024 - others} connections"):
        assert connections.connection_cap() == 1024 - others
    limit(256, 256)
    with pytest.raises(UserError, match="ulimit -n 256: ganforge explore needs at least"):
        connections.connection_cap()


def test_a_server_shut_as_soon_as_it_started_ends_without_an_error():
    """A Ctrl-C just after the start shuts uvicorn's server, and closes its socket, before the kernel's queue is
    lengthened: the command printed a traceback (Bad file descriptor, 1 of 60 starts interrupted under load)."""

    class ShutAtOnce:  # uvicorn's Server as a Ctrl-C leaves it: started, then shut, its socket closed
        started = False

        async def serve(self, sockets):
            self.started = True
            sockets[0].close()  # before the poll for `started` wakes
            await asyncio.sleep(0.05)

    sock = bind("127.0.0.1", 0)
    try:
        asyncio.run(run_server(ShutAtOnce(), sock, Rejections(write=lambda line: None)))
    finally:
        sock.close()
    assert sock.fileno() == -1


class _Terminated(Exception):
    """What the CLI's SIGTERM handler raises (exit 143), standing in for it here."""


def _raise_terminated(signum, frame):
    raise _Terminated


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("delay_s", [0.0, 0.002, 0.02, None])
def test_a_signal_at_any_moment_of_the_start_or_while_serving_stops_the_server_once(explorer, signum, delay_s):
    """Ctrl-C and SIGTERM have one owner while explore serves, whatever their moment (before uvicorn starts, during
    its start, once it serves: None): the server stops, its socket closes, and the signal comes out again as the CLI
    turns it into 130 or 143. Two owners (uvicorn's capture and asyncio.run's handler) gave a traceback, a hang or
    exit 0 depending on the moment."""
    sock = bind("127.0.0.1", 0)
    rejections = Rejections(write=lambda line: None)
    server = web_server(explorer, sock, ServedNames.of(("127.0.0.1",)), None, LIMITS, rejections)
    handlers_while_serving = []

    async def signalled():
        ours = signal.getsignal(signal.SIGINT)
        loop = asyncio.get_running_loop()
        loop.call_later(10, setattr, server, "should_exit", True)  # a watchdog, so that a hang fails the test
        if delay_s is not None:
            loop.call_later(delay_s, signal.raise_signal, signum)
        serving = asyncio.ensure_future(run_server(server, sock, rejections))
        while not (server.started or serving.done()):
            await asyncio.sleep(0.001)
        handlers_while_serving.extend(signal.getsignal(s) is ours for s in (signal.SIGINT, signal.SIGTERM))
        if delay_s is None:
            signal.raise_signal(signum)
        await serving

    previous_sigint = signal.getsignal(signal.SIGINT)
    previous_sigterm = signal.signal(signal.SIGTERM, _raise_terminated)
    start = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt if signum == signal.SIGINT else _Terminated), stopped_by_signals(server):
            asyncio.run(signalled())
    finally:
        signal.signal(signal.SIGTERM, previous_sigterm)
        sock.close()
    assert time.monotonic() - start < 8, "the server did not stop on the signal; the watchdog stopped it"
    assert server.should_exit and not server.force_exit
    assert handlers_while_serving == [True, True], "another handler owned the signals while the server ran"
    assert signal.getsignal(signal.SIGINT) is previous_sigint  # as it was (ignored in a background test run)
