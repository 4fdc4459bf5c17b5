"""Real servers on loopback for the streaming tests: a static HTTP server that answers byte ranges (and can drop
connections mid-body), and moto's S3-compatible server."""

import contextlib
import http.server
import os
import re
import threading
from pathlib import Path


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
