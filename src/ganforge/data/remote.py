"""Files of a shard dataset on a local disk or behind any fsspec URL (`s3://`, `gs://`, `https://`, ...), read with
retries: a flaky endpoint costs a pause, not the run.

Credentials are never options: each protocol's library reads its usual environment (for S3, AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL or ~/.aws; for GCS, GOOGLE_APPLICATION_CREDENTIALS; HTTP needs none).

A read that fails for a transient reason (a dropped connection, a timeout, a server error) is retried after
RETRY_DELAYS_S, from the byte it had reached; a missing file or a refused permission is reported at once, since
waiting does not fix it.
"""

import collections
import concurrent.futures
import contextlib
import time

from ganforge.data.files import brief
from ganforge.errors import UserError

# Bytes asked of a store per request (BlockReader): large enough that a request's overhead is small beside its
# transfer, small enough that a dropped connection costs little to fetch again.
READ_BLOCK_BYTES = 8 * 2**20
# Seconds to wait before each retry: about a minute of patience in all, doubling as is usual for object stores.
RETRY_DELAYS_S = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
_EXTRAS = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "http": "http", "https": "http"}


def is_url(location: str) -> bool:
    return "://" in location


def join(location: str, name: str) -> str:
    """The file `name` of the folder `location`; of a URL with a query (a signed URL granting a whole folder, as an
    Azure SAS token does), the name goes into the path and the query stays on the end."""
    folder, mark, query = location.partition("?") if is_url(location) else (location, "", "")
    return folder.rstrip("/") + "/" + name + mark + query


def filesystem(location: str, what: str | None):
    """(fsspec filesystem, path within it) for a local folder or a URL; UserError when its protocol's package is
    missing or the URL names no protocol fsspec knows."""
    import fsspec

    prefix = f"{what}: " if what else ""
    try:
        return fsspec.core.url_to_fs(location)
    except ImportError:
        protocol = location.split("://")[0]
        extra = _EXTRAS.get(protocol)
        hint = f"pip install 'ganforge[{extra}]'" if extra else f"install the fsspec package for {protocol}://"
        raise UserError(f"{prefix}reading {protocol}:// needs its fsspec package: {hint}") from None
    except ValueError as error:
        raise UserError(f"{prefix}{brief(location)}: not a URL fsspec can read ({brief(error, 100)})") from None


def transient_errors() -> tuple[type[BaseException], ...]:
    """What a retry may fix: the OS's connection errors and timeouts, and the protocol libraries' own errors for
    the same (aiohttp's, botocore's), where those libraries are installed."""
    errors: list[type[BaseException]] = [OSError, TimeoutError]
    try:
        import aiohttp

        errors.append(aiohttp.ClientError)
    except ImportError:
        pass
    try:
        import botocore.exceptions

        errors += [botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError]
    except ImportError:
        pass
    return tuple(errors)


def _final(error: BaseException, where: str, missing: str | None) -> UserError | None:
    """The UserError for an error no retry fixes, else None."""
    if isinstance(error, FileNotFoundError):
        return UserError(missing or f"{where}: missing (the shard dataset is incomplete: copy it again or rebuild it)")
    if isinstance(error, PermissionError):
        return UserError(
            f"{where}: access refused; give this process read access (for object storage, the protocol's usual "
            "credentials in the environment, such as AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)"
        )
    return None


def with_retries(action, where: str, delays=RETRY_DELAYS_S, missing: str | None = None, recover=None):
    """action(), tried again after each of `delays` while it fails for a transient reason (`recover()` runs before
    each retry, to drop a broken connection); UserError when it still fails, or fails for a reason that waiting does
    not fix (a missing file: `missing`, when given, is the message)."""
    transient, tries = transient_errors(), 0
    while True:
        try:
            return action()
        except transient as error:
            final = _final(error, where, missing)
            if final is not None:
                raise final from None
            if tries == len(delays):
                raise UserError(
                    f"{where}: still unreadable after {tries + 1} tries ({type(error).__name__}: {brief(error, 160)}); "
                    "check the endpoint and the network, then rerun the same command to resume"
                ) from None
            if recover is not None:
                recover()
            time.sleep(delays[tries])
            tries += 1


class RetryingFile:
    """A binary file of unknown size read from its start, one read() at a time, that survives transient errors:
    after one, it waits, reopens the file and seeks back to the byte it had reached."""

    def __init__(self, fs, path: str, where: str, delays=RETRY_DELAYS_S, missing: str | None = None):
        self.fs, self.path, self.where, self.delays, self.missing = fs, path, where, tuple(delays), missing
        self.offset, self._file = 0, None

    def read(self, size: int) -> bytes:
        def attempt() -> bytes:
            if self._file is None:
                self._file = self.fs.open(self.path, "rb")
                if self.offset:
                    self._file.seek(self.offset)
            return self._file.read(size)

        data = with_retries(attempt, self.where, self.delays, self.missing, recover=self.close)
        self.offset += len(data)
        return data

    def close(self) -> None:
        if self._file is not None:
            file, self._file = self._file, None
            with contextlib.suppress(*transient_errors()):  # a connection already broken has nothing to release
                file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class BlockReader:
    """A file whose size is known (a shard: index.json lists it) read from its start, one read() at a time, through
    range requests of `block` bytes with `ahead` of them in flight: the next blocks arrive while this one is parsed,
    so each request's latency is hidden, as object stores need. Each block is retried on its own."""

    def __init__(self, fs, path: str, size: int, where: str, delays=RETRY_DELAYS_S, block=READ_BLOCK_BYTES, ahead=4):
        self.fs, self.path, self.size, self.where, self.delays, self.block = fs, path, size, where, delays, block
        self.offset, self._requested = 0, 0
        self._pending: collections.deque = collections.deque()
        self._data, self._position = b"", 0
        self._pool = concurrent.futures.ThreadPoolExecutor(ahead, thread_name_prefix="ganforge-read")
        self._ahead = ahead

    def _fetch(self, start: int, end: int) -> bytes:
        data = with_retries(lambda: self.fs.cat_file(self.path, start=start, end=end), self.where, self.delays)
        if len(data) != end - start:
            raise UserError(
                f"{self.where}: ends before byte {end} of the {self.size} index.json lists; the shard is cut short "
                "or was replaced: copy it again or rebuild the shards"
            )
        return data

    def read(self, size: int) -> bytes:
        if self._position == len(self._data):
            while len(self._pending) < self._ahead and self._requested < self.size:
                end = min(self._requested + self.block, self.size)
                self._pending.append(self._pool.submit(self._fetch, self._requested, end))
                self._requested = end
            if not self._pending:
                return b""
            self._data, self._position = self._pending.popleft().result(), 0
        data = self._data[self._position : self._position + size]
        self._position += len(data)
        self.offset += len(data)
        return data

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_whole(fs, path: str, cap: int, where: str, delays=RETRY_DELAYS_S, missing: str | None = None) -> bytes:
    """A small file (an index) read whole, at most `cap` bytes: UserError if it holds more."""
    with RetryingFile(fs, path, where, delays, missing) as file:
        chunks, total = [], 0
        while chunk := file.read(min(1 << 20, cap + 1 - total)):
            chunks.append(chunk)
            total += len(chunk)
            if total > cap:
                raise UserError(f"{where}: more than the {cap} bytes such a file may take; rebuild it")
    return b"".join(chunks)
