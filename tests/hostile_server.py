"""A hostile HTTP server on loopback, for the remote-data tests and benchmarks/fuzz_readers.py: one thread running an
asyncio server that serves the files of a folder, well or badly as the first segment of the request's path says.

    GET /MODE/PATH          the file PATH of the folder, served as MODE says
    GET /MODE.SUFFIX/PATH   the same for files whose name ends in SUFFIX; other files are served well
                            (/endless.tar/ serves index.json well and never ends a shard)
    GET /MODE@K/PATH        the same from the K+1-th GET of each file on: a server that fails mid-run
                            (/endless.tar@1/ serves each shard well once, then never ends it)

MODES (served well, `ok`, answers single byte ranges with 206, as object stores do):
    endless        the asked bytes, then zeros for as long as the client reads (no Content-Length)
    no-range       ignores Range: 200 and the whole file
    silent         reads the request and never answers
    drip           the right answer, one byte every DRIP_S seconds (headers too)
    wrong-length   ignores Range, declares 2**50 bytes, sends the file, then zeros for as long as the client reads
    redirect-loop  302 to itself, forever
    error-500      500 for every request
    huge-headers   a status line, then a header of 1 MiB
    gzip-bomb      Content-Encoding: gzip, a body of GZIP_BOMB_BYTES zeros compressed to about a thousandth

The same answers come for any path, so an S3 client pointed at the server (AWS_ENDPOINT_URL, path-style requests:
`s3://MODE/PATH`) meets them too. `requests` records (mode, path, byte range asked: (first, last or None) or None)
of each request.
"""

import asyncio
import collections
import contextlib
import gzip
import re
import threading
from pathlib import Path

MODES = ("ok", "endless", "no-range", "silent", "drip", "wrong-length", "redirect-loop", "error-500", "huge-headers",
         "gzip-bomb")  # fmt: skip
DRIP_S = 0.05
HUGE_HEADER_BYTES = 2**20
GZIP_BOMB_BYTES = 2**30  # as 64 gzip members of 16 MiB each (a gzip file may hold several)
_FILE_MODES = ("ok", "endless", "no-range", "drip", "wrong-length")  # the modes that send the file
_ENDLESS_MODES = ("endless", "wrong-length")
_ZEROS = bytes(2**16)
_RANGE = re.compile(r"bytes=(\d+)-(\d*)")


class _Request:
    def __init__(self, method: str, target: str, headers: dict[str, str]):
        self.method, self.headers = method, headers
        parts = target.split("?")[0].lstrip("/").split("/", 1)
        self.spec, self.path = parts[0], parts[1] if len(parts) > 1 else ""
        kind, _, good = self.spec.partition("@")
        self.mode, _, self.suffix = kind.partition(".")
        self.good_answers = int(good) if good.isdigit() else 0
        ranged = _RANGE.fullmatch(headers.get("range", ""))
        self.range = (int(ranged.group(1)), int(ranged.group(2)) if ranged.group(2) else None) if ranged else None


class HostileServer:
    """The server's state: the folder it serves, its URL, and what it was asked."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.requests: list[tuple[str, str, tuple[int, int | None] | None]] = []
        self.url = ""
        self._loop = asyncio.new_event_loop()
        self._connections: set[asyncio.Task] = set()
        self._gets: collections.Counter = collections.Counter()  # GETs by (first path segment, file)
        # Made before serving: made at the first request, it took longer than a short read time-out on a busy machine
        self._bomb = gzip.compress(bytes(2**24), 9) * (GZIP_BOMB_BYTES // 2**24)

    def url_for(self, mode: str) -> str:
        return f"{self.url}/{mode}"

    # ---- serving ----

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._connections.add(asyncio.current_task())
        try:
            while await self._answer(reader, writer):
                continue
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass  # the client went away, or sent what is not a request: the connection ends
        except asyncio.CancelledError:
            pass  # the server stops: the connection ends (a cancelled handler would be logged as an error)
        finally:
            self._connections.discard(asyncio.current_task())
            writer.close()

    async def _answer(self, reader, writer) -> bool:
        """Answer one request; whether the connection stays open for another."""
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        method, target, _ = head[0].split(" ", 2)
        headers = {}
        for line in head[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        request = _Request(method, target, headers)
        self.requests.append((request.mode, request.path, request.range))
        mode = request.mode if self._applies(request) else "ok"
        if mode == "silent":
            await asyncio.Event().wait()
        file = self.root / request.path
        if request.mode not in MODES or (mode in _FILE_MODES and not file.is_file()):
            await self._send(writer, mode, 404, {"Content-Length": "0"}, b"")
            return True
        status, fields, body = await self._response(mode, request, file)
        if request.method == "HEAD":
            body = b""
        await self._send(writer, mode, status, fields, body)
        if mode in _ENDLESS_MODES and request.method != "HEAD":
            while True:
                writer.write(_ZEROS)
                await writer.drain()
        return "Connection" not in fields

    def _applies(self, request: _Request) -> bool:
        """Is the mode meant for this request (else it is served well)?"""
        if request.method == "GET":
            self._gets[request.spec, request.path] += 1
        after_good = self._gets[request.spec, request.path] > request.good_answers
        return request.path.endswith(request.suffix) and after_good

    async def _response(self, mode: str, request: _Request, file: Path) -> tuple[int, dict, bytes]:
        if mode == "redirect-loop":
            return 302, {"Location": f"{self.url}/{request.mode}/{request.path}", "Content-Length": "0"}, b""
        if mode == "error-500":
            return 500, {"Content-Length": "0"}, b""
        if mode == "huge-headers":
            return 200, {"X-Filler": "a" * HUGE_HEADER_BYTES, "Content-Length": "0"}, b""
        if mode == "gzip-bomb":
            return 200, {"Content-Encoding": "gzip", "Content-Length": str(len(self._bomb))}, self._bomb
        data = file.read_bytes()
        if mode == "no-range":
            return 200, {"Content-Length": str(len(data))}, data
        if mode == "wrong-length":
            return 200, {"Content-Length": str(2**50), "Connection": "close"}, data
        status, fields, body = _ranged(data, request.range)
        if mode == "endless":
            del fields["Content-Length"]
            fields["Connection"] = "close"
        return status, fields, body

    async def _send(self, writer, mode: str, status: int, fields: dict, body: bytes) -> None:
        lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}"]
        lines += [f"{name}: {value}" for name, value in fields.items()]
        message = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body
        if mode != "drip":
            writer.write(message)
            await writer.drain()
            return
        for offset in range(len(message)):
            writer.write(message[offset : offset + 1])
            await writer.drain()
            await asyncio.sleep(DRIP_S)

    # ---- starting and stopping ----

    async def _start(self) -> asyncio.Server:
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0, limit=2**16)
        self.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        return server

    async def _stop(self, server: asyncio.Server) -> None:
        server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)

    @contextlib.contextmanager
    def running(self):
        thread = threading.Thread(target=self._loop.run_forever, name="hostile-server", daemon=True)
        thread.start()
        server = asyncio.run_coroutine_threadsafe(self._start(), self._loop).result()
        try:
            yield self
        finally:
            asyncio.run_coroutine_threadsafe(self._stop(server), self._loop).result()
            self._loop.call_soon_threadsafe(self._loop.stop)
            thread.join()
            self._loop.close()


def _ranged(data: bytes, asked: tuple[int, int | None] | None) -> tuple[int, dict, bytes]:
    """A well-behaved answer: the whole file, or the byte range asked (206), or 416 past its end."""
    if asked is None:
        return 200, {"Content-Length": str(len(data))}, data
    start, last = asked
    if start >= len(data):
        return 416, {"Content-Range": f"bytes */{len(data)}", "Content-Length": "0"}, b""
    end = len(data) if last is None else min(last + 1, len(data))
    fields = {"Content-Range": f"bytes {start}-{end - 1}/{len(data)}", "Content-Length": str(end - start)}
    return 206, fields, data[start:end]


_REASONS = {200: "OK", 206: "Partial Content", 302: "Found", 404: "Not Found", 416: "Range Not Satisfiable",
            500: "Internal Server Error"}  # fmt: skip


@contextlib.contextmanager
def hostile_server(root: Path):
    """A HostileServer for the files of `root` on 127.0.0.1, running in its own thread while the context lasts."""
    with HostileServer(root).running() as server:
        yield server
