"""Real servers on loopback for the streaming tests: a static HTTP server that answers byte ranges (and can drop
connections mid-body), moto's S3-compatible server, and a PostgreSQL server."""

import contextlib
import http.server
import os
import pwd
import re
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path

from launch_helpers import free_port


class _Handler(http.server.SimpleHTTPRequestHandler):
    """Files of the server's folder, with single byte ranges (as object stores and CDNs answer them). The server's
    `drops` maps a file name to how many of its next GETs send half the body and then close the connection;
    `mid_drops` does the same for GETs of a range that starts past the file's first byte."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # quiet: the tests report what matters
        return

    def do_HEAD(self) -> None:
        path = self._file()
        if path is None:
            return
        self.send_response(200)
        self.send_header("Content-Length", str(path.stat().st_size))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()

    def do_GET(self) -> None:
        path = self._file()
        if path is None:
            return
        size = path.stat().st_size
        ranged = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        start, end = 0, size - 1
        if ranged:
            start, end = int(ranged.group(1)), min(int(ranged.group(2) or end), end)
        with path.open("rb") as file:  # only the range: shards are large
            file.seek(start)
            body = file.read(max(end + 1 - start, 0))
        self.send_response(206 if ranged else 200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        if ranged:
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.end_headers()
        self.server.requests.append((path.name, start))
        drops = self.server.mid_drops if start > 0 and self.server.mid_drops.get(path.name) else self.server.drops
        if drops.get(path.name, 0) > 0:
            drops[path.name] -= 1
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
            return
        self.wfile.write(body)

    def _file(self) -> Path | None:
        self.server.paths.append(self.path)
        path = Path(self.server.root) / self.path.lstrip("/").split("?")[0]
        if not path.is_file():
            self.send_error(404)
            return None
        return path


@contextlib.contextmanager
def http_server(root: Path):
    """An HTTP server for the files of `root` on 127.0.0.1; yields it (`.url`, `.drops`, `.mid_drops`, `.requests`:
    (file name, first byte) of each GET, `.paths`: the path and query of each request, as sent). A query and
    credentials (which arrive as an Authorization header) are ignored."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    server.root, server.drops, server.mid_drops, server.requests, server.paths = root, {}, {}, [], []
    server.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def s3_server(monkeypatch):
    """moto's S3-compatible server on 127.0.0.1, with the environment every AWS client reads pointed at it; yields
    its endpoint URL."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": endpoint,
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    try:
        yield endpoint
    finally:
        server.stop()


def upload(endpoint: str, bucket: str, folder: Path, prefix: str) -> None:
    """Every file of `folder` into s3://bucket/prefix/ with boto3 (the bucket is created)."""
    import boto3

    client = boto3.client("s3", endpoint_url=endpoint, region_name=os.environ.get("AWS_DEFAULT_REGION", "us-east-1"))
    client.create_bucket(Bucket=bucket)
    for path in sorted(folder.iterdir()):
        client.put_object(Bucket=bucket, Key=f"{prefix}/{path.name}", Body=path.read_bytes())


POSTGRES_USER = "postgres"  # Debian's package makes this account; initdb refuses to run as root


def _postgres_binaries() -> Path | None:
    """The folder holding initdb and pg_ctl: on the PATH, else Debian's /usr/lib/postgresql/<version>/bin."""
    found = shutil.which("initdb")
    candidates = [Path(found).resolve().parent] if found else []
    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
    return next((c for c in candidates if (c / "initdb").is_file() and (c / "pg_ctl").is_file()), None)


@contextlib.contextmanager
def postgres_server():
    """A PostgreSQL server of its own on loopback (a fresh cluster in a temporary folder, trust authentication),
    yielding its URL with a user and a password (which the server does not check) as a user would write it. Skips,
    saying why, where there are no server binaries or no account to run them as."""
    import pytest

    binaries = _postgres_binaries()
    if binaries is None:
        pytest.skip("no PostgreSQL server (initdb, pg_ctl): install Debian's postgresql package")
    as_user = []
    if os.geteuid() == 0:
        try:
            owner = pwd.getpwnam(POSTGRES_USER)
        except KeyError:
            pytest.skip(f"running as root and no {POSTGRES_USER} account to run PostgreSQL as (initdb refuses root)")
        as_user = ["runuser", "-u", POSTGRES_USER, "--"]
    folder = Path(tempfile.mkdtemp(prefix="ganforge-pg-"))
    if as_user:
        os.chown(folder, owner.pw_uid, owner.pw_gid)
    port = free_port()
    data = folder / "data"
    run = lambda *args: subprocess.run([*as_user, *map(str, args)], capture_output=True, text=True, timeout=120)  # noqa: E731
    try:
        made = run(binaries / "initdb", "-D", data, "-U", "sweep", "--auth=trust", "--no-sync")
        if made.returncode != 0:
            pytest.skip(f"initdb failed: {made.stderr.strip()[-300:]}")
        started = run(binaries / "pg_ctl", "-D", data, "-l", folder / "log", "-w", "-t", "60", "-o",
                      f"-h 127.0.0.1 -p {port} -k {folder} -c fsync=off", "start")  # fmt: skip
        if started.returncode != 0:
            pytest.skip(f"PostgreSQL did not start: {started.stderr.strip()[-300:]}")
        yield f"postgresql://sweep:hunter2-secret@127.0.0.1:{port}/postgres"
    finally:
        if (data / "postmaster.pid").exists():
            run(binaries / "pg_ctl", "-D", data, "-m", "immediate", "-w", "stop")
        shutil.rmtree(folder, ignore_errors=True)
