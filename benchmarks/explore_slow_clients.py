"""`ganforge explore` under slow clients: N connections (2,000 by default) opened from this one process, each sending
half a request and then nothing, held open while normal requests are timed; how long those take, what became of the
slow connections, and how much the server wrote to stderr. The baseline is the same normal requests against the same
server before the slow clients come. The server runs with a low limit on open files (1,024, soft and hard: the common
default, which it cannot raise), the case where it used to run out of descriptors; this process raises its own.

    .venv/bin/python benchmarks/explore_slow_clients.py [--clients 2000] [--hold 20] [--server-nofile 1024]
        [--reconnect]   # a sustained flood: each slow client the server closes is replaced at once
"""

import argparse
import os
import resource
import selectors
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import torch

from ganforge.nets import Generator
from ganforge.snapshot import save_snapshot

TINY = dict(resolution=16, z_dim=8, w_dim=8, channel_base=64, channel_max=8, mapping_layers=2)
HALF_REQUEST = b"GET /api/networks HTTP/1.1\r\nHost: 127.0.0.1\r\n"  # no blank line: the request never ends
NORMAL_TIMEOUT_S = 15
NORMAL_EVERY_S = 0.25


def start_server(network: Path, nofile: int, stderr_path: Path) -> tuple[subprocess.Popen, str]:
    def limit_files():
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    command = [sys.executable, "-m", "ganforge", "explore", "--network", str(network), "--port", "0"]
    env = os.environ | {"OMP_NUM_THREADS": "1"}
    with open(stderr_path, "wb") as stderr:
        proc = subprocess.Popen(
            [*command, "--device", "cpu"], stdout=subprocess.PIPE, stderr=stderr, text=True, env=env,
            preexec_fn=limit_files,
        )  # fmt: skip
    return proc, proc.stdout.readline().split()[2]


def normal_request(url: str) -> float | None:
    """Seconds a normal request took to be answered with 200; None if it failed or timed out."""
    start = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=NORMAL_TIMEOUT_S) as response:
            response.read()
            return time.perf_counter() - start if response.status == 200 else None
    except (urllib.error.URLError, OSError):
        return None


def hold_slow_clients(address, count: int, reconnect: bool, stop: threading.Event, fate: dict) -> None:
    """Opens `count` connections, each sent half a request, then watches them until `stop`, opening a new one for
    each the server closes when `reconnect`: fate["opened"], ["failed"] (could not connect), ["opened_s"] (seconds to
    open the first `count`), ["closed_at"] (the second, from the first connect, at which the server closed each)."""
    start, selector = time.monotonic(), selectors.DefaultSelector()
    fate.update(opened=0, failed=0, closed_at=[])
    for _ in range(count):
        _connect(address, selector, fate)
        _note_closures(selector, 0, start, fate["closed_at"])
    fate["opened_s"] = time.monotonic() - start
    while not stop.is_set() and selector.get_map():
        closed = _note_closures(selector, 0.1, start, fate["closed_at"])
        for _ in range(closed if reconnect else 0):
            _connect(address, selector, fate)
    for key in list(selector.get_map().values()):
        key.fileobj.close()
    selector.close()


def _connect(address, selector: selectors.BaseSelector, fate: dict) -> None:
    sock = socket.socket()
    sock.settimeout(5)
    try:
        sock.connect(address)
        sock.sendall(HALF_REQUEST)
    except OSError:
        sock.close()
        fate["failed"] += 1
        return
    sock.setblocking(False)
    selector.register(sock, selectors.EVENT_READ)
    fate["opened"] += 1


def _note_closures(selector: selectors.BaseSelector, timeout: float, start: float, closed_at: list[float]) -> int:
    """Notes (and returns how many) of the watched connections the server has closed."""
    closed = 0
    for key, _ in selector.select(timeout=timeout):
        try:
            data = key.fileobj.recv(4096)
        except ConnectionResetError:
            data = b""
        if not data:
            closed_at.append(time.monotonic() - start)
            selector.unregister(key.fileobj)
            key.fileobj.close()
            closed += 1
    return closed


def timed_requests(url: str, seconds: float) -> list[float | None]:
    times, k, end = [], 0, time.monotonic() + seconds
    while time.monotonic() < end:
        query = "api/networks" if k % 2 == 0 else f"api/image?seed={10_000 + k}"  # a new image each time: no cache
        times.append(normal_request(url + query))
        k += 1
        time.sleep(NORMAL_EVERY_S)
    return times


def summary(name: str, times: list[float | None]) -> str:
    answered = [t for t in times if t is not None]
    if not answered:
        return f"| {name} | {len(times)} | 0 | - | - |"
    p50 = 1000 * statistics.median(answered)
    return f"| {name} | {len(times)} | {len(answered)} | {p50:.0f} | {1000 * max(answered):.0f} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=2000)
    parser.add_argument("--hold", type=float, default=20.0, help="seconds the slow clients are held open")
    parser.add_argument("--server-nofile", type=int, default=1024, help="the server's limit on open files")
    parser.add_argument("--reconnect", action="store_true", help="replace each slow client the server closes")
    args = parser.parse_args()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    with tempfile.TemporaryDirectory() as tmp:
        torch.manual_seed(0)
        network = Path(tmp) / "tiny.safetensors"
        save_snapshot(network, Generator(**TINY), {})
        stderr_path = Path(tmp) / "stderr.txt"
        proc, url = start_server(network, args.server_nofile, stderr_path)
        try:
            baseline = timed_requests(url, 3)
            host, port = url.split("/")[2].rsplit(":", 1)
            stop, fate = threading.Event(), {}
            holding = ((host, int(port)), args.clients, args.reconnect, stop, fate)
            holder = threading.Thread(target=hold_slow_clients, args=holding)
            holder.start()
            loaded = timed_requests(url, args.hold)  # from the first slow client on
            stop.set()
            holder.join()
            time.sleep(1)
            after = timed_requests(url, 2)
        finally:
            proc.terminate()
            proc.wait()
        stderr = stderr_path.read_bytes()
    report(args, (baseline, loaded, after), fate, stderr)


def report(args, timings, fate: dict, stderr: bytes) -> None:
    baseline, loaded, after = timings
    again = ", each replaced when the server closes it" if args.reconnect else ""
    print(
        f"{args.clients} slow clients{again}, held {args.hold:g} s; server limited to {args.server_nofile} open files"
    )
    print("| normal requests | sent | answered | p50 ms | max ms |\n| --- | --- | --- | --- | --- |")
    print(summary("baseline (no slow clients)", baseline))
    print(summary(f"while {args.clients} slow clients connect and are held", loaded))
    print(summary("after they close", after))
    closed = sorted(fate["closed_at"])
    print(
        f"slow clients: {fate['opened']} connected, the first {args.clients} in {fate['opened_s']:.1f} s "
        f"({fate['failed']} could not); closed by the server: {sum(t <= fate['opened_s'] for t in closed)} while the "
        f"first {args.clients} were connecting, {sum(t > fate['opened_s'] for t in closed)} after (the last at "
        f"{closed[-1] if closed else 0:.1f} s), {fate['opened'] - len(closed)} still open after {args.hold:g} s"
    )
    print(f"server stderr: {len(stderr):,} bytes, {stderr.count(b'Traceback')} tracebacks")
    for line in stderr.decode(errors="replace").splitlines()[:12]:
        print(f"  {line[:300]}")


if __name__ == "__main__":
    main()
