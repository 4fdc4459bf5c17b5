"""One byte range of a file, read with bounds: never more bytes than asked, never longer than the limits allow.

Web servers (`http://`, `https://`) and object stores (`s3://`) are asked for `bytes=START-LAST` with no compression,
and their answer is checked before its body is read: the status (206 and the range asked, or 200 and the file from
its first byte), the declared length (at most the range) and the encoding (none). The body's pieces are then kept
as they arrive (Received), never past the range; a server that still has bytes to send after it, without having
declared a length, broke the range and is refused. Connect and read time-outs come from the protocol's
client; the deadline of the whole request is an asyncio time-out around it.

What a retry may fix (a dropped or refused connection, a time-out, HTTP 408, 429 and 5xx) is raised as the
protocol's own exception for the caller to retry (`transient_errors`, `describe`); what it cannot (a missing file, a
refused permission) as FileNotFoundError and PermissionError; a server that broke the protocol's rules as Refused.
Other filesystems (a local disk, gs://) are read through fsspec's file objects, in chunks.
"""

import asyncio

from ganforge.data.files import brief
from ganforge.data.remote_limits import Limits
from ganforge.urls import public_text

CHUNK_BYTES = 2**20  # what one read of an S3 response body asks for
MAX_REDIRECTS = 10
MAX_HEADER_BYTES = 8190  # one status or header line (aiohttp's default, the common server limit)
MAX_HEADERS = 128
_RETRY_STATUSES = (408, 429, 500, 502, 503, 504)


class Refused(Exception):
    """The server broke the rules of its protocol; the message says how (the caller adds the URL)."""


class Unavailable(Exception):
    """An answer that says to come back later (HTTP 408, 429, 5xx)."""

    def __init__(self, status: int):
        super().__init__(f"HTTP {status}")
        self.status = status


class DeadlinePassed(TimeoutError):
    """A request that was not done within its deadline."""


class Received:
    """The bytes of a range as they arrived, in pieces: joined once, when wanted, so that a range of any length costs
    one copy of it in memory, and a retry after a failure continues from the byte that had arrived."""

    def __init__(self):
        self.pieces: list[bytes] = []
        self.size = 0

    def add(self, piece: bytes) -> None:
        self.pieces.append(piece)
        self.size += len(piece)

    def joined(self) -> bytes:
        return b"".join(self.pieces)


def read_into(fs, path: str, into: Received, start: int, end: int, limits: Limits) -> None:
    """Add bytes [start + into.size, end) of the file to `into` (fewer when the file ends first)."""
    first = start + into.size
    if first >= end:
        return
    protocols = (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)
    if "http" in protocols or "s3" in protocols:
        # On the loop of fsspec's I/O thread, where the filesystem's client lives; not through fsspec's `sync`,
        # which would replace every time-out by one FSTimeoutError that no longer says which time-out it was.
        request = _http_into if "http" in protocols else _s3_into
        bounded = _within_deadline(fs, request, path, into, first, end - start, limits)
        asyncio.run_coroutine_threadsafe(bounded, fs.loop).result()
        return
    with fs.open(path, "rb") as file:
        file.seek(first)
        while into.size < end - start and (chunk := file.read(min(CHUNK_BYTES, end - start - into.size))):
            into.add(chunk)


async def _within_deadline(fs, request, path: str, into: Received, first: int, total: int, limits: Limits) -> None:
    client = await fs.set_session()  # made outside the deadline: local work (botocore's takes a second to load)
    try:
        await asyncio.wait_for(request(fs, client, path, into, first, total, limits), limits.request_s)
    except asyncio.TimeoutError as error:
        if type(error) is not asyncio.TimeoutError:  # a client's own time-out (aiohttp's subclass it)
            raise
        raise DeadlinePassed() from None


def transient_errors() -> tuple[type[BaseException], ...]:
    """What a retry may fix: the OS's connection errors and time-outs, answers that say to come back later, and the
    protocol libraries' errors for the same (aiohttp's, botocore's), where those libraries are installed."""
    errors: list[type[BaseException]] = [OSError, TimeoutError, Unavailable]
    try:
        import aiohttp

        errors.append(aiohttp.ClientError)
    except ImportError:
        pass
    try:
        import botocore.exceptions

        errors.append(botocore.exceptions.BotoCoreError)
    except ImportError:
        pass
    return tuple(errors)


def describe(error: BaseException, limits: Limits) -> str:
    """What a transient error says the server (or the network) did, and which limit it broke."""
    if isinstance(error, Unavailable):
        return f"answered HTTP {error.status}, which says to come back later"
    for kinds, text in _descriptions(limits):
        if isinstance(error, kinds):
            return text
    return f"unreadable ({type(error).__name__}: {public_text(brief(error, 160))})"


def _descriptions(limits: Limits) -> list[tuple[tuple[type[BaseException], ...], str]]:
    connect, read, dropped = [], [], [ConnectionResetError, BrokenPipeError]
    unreachable: list[type[BaseException]] = [ConnectionRefusedError]
    try:
        import aiohttp

        connect.append(aiohttp.ConnectionTimeoutError)
        read.append(aiohttp.SocketTimeoutError)
        unreachable.append(aiohttp.ClientConnectorError)
        dropped += [aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError]
    except ImportError:
        pass
    try:
        import botocore.exceptions as boto

        connect.append(boto.ConnectTimeoutError)
        read.append(boto.ReadTimeoutError)
        unreachable.append(boto.EndpointConnectionError)
    except ImportError:
        pass
    return [
        ((DeadlinePassed,), f"not done within {limits.request_s:g} s (the deadline of one request)"),
        (tuple(connect), f"no connection within {limits.connect_s:g} s (the connect time-out)"),
        (tuple(read), f"silent for {limits.read_s:g} s (the read time-out)"),
        (tuple(unreachable), "unreachable (the connection was refused or found no route: is the server up?)"),
        (tuple(dropped), "dropped the connection in the middle of an answer"),
    ]


# ---- checks common to HTTP and S3 ----------------------------------------------------------------------------------


def _asked(first: int, last: int) -> str:
    return f"a request for bytes {first}-{last}"


def check_status(status: int, first: int, last: int) -> None:
    """Raise what an HTTP status means for a GET of a byte range, unless it is 200 or 206 (see check_answer) or 416
    (the file ends before `first`, which the caller finds out)."""
    if status in (200, 206, 416):
        return
    if status in (404, 410):
        raise FileNotFoundError(status)
    if status in (401, 403):
        raise PermissionError(status)
    if status in _RETRY_STATUSES:
        raise Unavailable(status)
    raise Refused(f"the server answered HTTP {status} to {_asked(first, last)}")


def check_answer(status: int, content_range, length, encoding, first: int, last: int) -> int | None:
    """Check the declared range, length and encoding of an answer (200 or 206) to a request for bytes first-last;
    return the declared length, or None when the server declared none."""
    declared = None if length is None else int(length) if str(length).isdigit() else -1
    if status == 200 and (first > 0 or (declared or 0) > last + 1 - first):
        size = "" if declared is None else f" ({brief(length, 24)} bytes)"
        raise Refused(
            f"the server ignores byte ranges: it answered {_asked(first, last)} with HTTP 200, the whole file{size}; "
            "serve the files from one that answers ranges (HTTP 206), as object stores and most web servers do"
        )
    if status == 206 and content_range is not None:
        start = str(content_range).removeprefix("bytes ").split("-")[0].strip()
        if start != str(first):
            raise Refused(f"the server answered {_asked(first, last)} with {brief(content_range, 60)}")
    if encoding not in (None, "", "identity"):
        raise Refused(
            f"the server sent the file {brief(encoding, 20)}-encoded though asked for its bytes as stored; turn "
            "compression off for these files"
        )
    if declared is not None and not 0 <= declared <= last + 1 - first:
        raise Refused(
            f"the server declares {brief(length, 24)} bytes (Content-Length) for {_asked(first, last)}, which "
            f"holds {last + 1 - first}"
        )
    return declared


async def read_body(next_piece, into: Received, total: int, declared: int | None, first: int, last: int) -> None:
    """Add the body, piece by piece as the client holds it (`next_piece()`, b"" at its end), to `into` until it holds
    `total` bytes or the body ends; Refused when a body of undeclared length goes on past the range (what lies past
    it is never kept)."""
    excess = b""
    while into.size < total:
        piece = await next_piece()
        if not piece:
            return
        room = total - into.size
        into.add(piece[:room])
        excess = piece[room:]
    if declared is None and (excess or await next_piece()):
        raise Refused(f"the server sends more than {_asked(first, last)} holds (it ignores the range's end)")


# ---- HTTP(S) through aiohttp, the session fsspec's HTTP filesystem holds ---------------------------------------------


async def _http_into(fs, session, url: str, into: Received, first: int, total: int, limits: Limits) -> None:
    import aiohttp

    last = first + total - into.size - 1
    timeout = aiohttp.ClientTimeout(connect=limits.connect_s, sock_connect=limits.connect_s, sock_read=limits.read_s)
    headers = {"Range": f"bytes={first}-{last}", "Accept-Encoding": "identity"}
    try:
        async with session.get(
            fs.encode_url(url), headers=headers, timeout=timeout, auto_decompress=False, max_redirects=MAX_REDIRECTS,
            max_line_size=MAX_HEADER_BYTES, max_field_size=MAX_HEADER_BYTES, max_headers=MAX_HEADERS,
        ) as response:  # fmt: skip
            check_status(response.status, first, last)
            if response.status == 416:
                return
            fields = response.headers
            declared = check_answer(
                response.status, fields.get("Content-Range"), fields.get("Content-Length"),
                fields.get("Content-Encoding"), first, last,
            )  # fmt: skip
            # readany: each piece as aiohttp received it (at most its read buffer), without joining pieces first
            await read_body(response.content.readany, into, total, declared, first, last)
    except aiohttp.TooManyRedirects:
        raise Refused(f"the server redirects more than {MAX_REDIRECTS} times (a redirect loop?)") from None
    except (aiohttp.ClientResponseError, aiohttp.RedirectClientError) as error:
        raise _not_http(error) from None


def _not_http(error: BaseException) -> Refused:
    """The refusal of an answer that aiohttp could not parse within its limits (a header too long, too many)."""
    message = getattr(error, "message", "") or type(error).__name__
    return Refused(f"the server's answer is not HTTP within this client's limits ({brief(message, 100)})")


# ---- S3 through aiobotocore, the client s3fs holds -----------------------------------------------------------------


async def _s3_into(fs, client, path: str, into: Received, first: int, total: int, limits: Limits) -> None:
    import aiohttp
    from botocore.exceptions import ClientError, HTTPClientError

    last = first + total - into.size - 1
    bucket, key, version = fs.split_path(path)
    try:
        answer = await client.get_object(
            Bucket=bucket, Key=key, Range=f"bytes={first}-{last}", **({"VersionId": version} if version else {})
        )
    except ClientError as error:
        check_status(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0), first, last)
        return  # 416: the file ends before `first`
    except HTTPClientError as error:  # aiobotocore's wrapper of aiohttp's errors
        cause = error.kwargs.get("error")
        if isinstance(cause, aiohttp.ClientResponseError):
            raise _not_http(cause) from None
        raise
    body = answer["Body"]
    try:
        # botocore says 200 or 206 only through ContentRange, which is there when the server answered a range
        status = 200 if answer.get("ContentRange") is None else 206
        declared = check_answer(status, answer.get("ContentRange"), answer.get("ContentLength"), None, first, last)
        await read_body(lambda: body.read(CHUNK_BYTES), into, total, declared, first, last)
    finally:
        body.close()
