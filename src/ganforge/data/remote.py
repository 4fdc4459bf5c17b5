"""Files of a shard dataset on a local disk or behind any fsspec URL (`s3://`, `gs://`, `https://`, ...), read in
byte ranges with bounds and retries: a flaky endpoint costs a pause, a hostile one a clear error, neither the memory.

Credentials are never options: each protocol's library reads its usual environment (for S3, AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL or ~/.aws; for GCS, GOOGLE_APPLICATION_CREDENTIALS; HTTP needs none).

Every read asks for a byte range no longer than what index.json declares (a shard's size, the label file's) or a
fixed cap (index.json itself), and receives no more (`ganforge.data.fetch`). A read that fails for a transient reason
(a dropped or refused connection, a time-out, a server error) is retried from the byte it had reached, after each of
the limits' delays while its patience lasts (`ganforge.data.remote_limits`); a missing file, a refused permission or
a server that breaks its protocol's rules is reported at once, since waiting does not fix it.
"""

import collections
import concurrent.futures
import time

from ganforge.data import fetch
from ganforge.data.files import brief
from ganforge.data.remote_limits import ENVIRONMENT, Limits
from ganforge.errors import UserError
from ganforge.urls import public_text

# Bytes asked of a store per request (BlockReader): large enough that a request's overhead is small beside its
# transfer, small enough that a dropped connection costs little to fetch again.
READ_BLOCK_BYTES = 8 * 2**20
_EXTRAS = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "http": "http", "https": "http"}


def is_url(location: str) -> bool:
    return "://" in location


def join(location: str, name: str) -> str:
    """The file `name` of the folder `location`; of a URL with a query (a signed URL granting a whole folder, as an
    Azure SAS token does), the name goes into the path and the query stays on the end."""
    folder, mark, query = location.partition("?") if is_url(location) else (location, "", "")
    return folder.rstrip("/") + "/" + name + mark + query


def filesystem(location: str, what: str | None, limits: Limits):
    """(fsspec filesystem, path within it) for a local folder or a URL, its client held to `limits` where the
    protocol's client takes them at creation (S3: botocore's time-outs, and no retries of its own: ours count);
    UserError when the protocol's package is missing or the URL names no protocol fsspec knows."""
    import fsspec

    prefix = f"{what}: " if what else ""
    protocol = location.split("://")[0] if is_url(location) else "file"
    options = {}
    if _EXTRAS.get(protocol) == "s3":
        config = {"connect_timeout": limits.connect_s, "read_timeout": limits.read_s}
        options["config_kwargs"] = config | {"retries": {"total_max_attempts": 1}}
    try:
        return fsspec.core.url_to_fs(location, **options)
    except ImportError:
        extra = _EXTRAS.get(protocol)
        hint = f"pip install 'ganforge[{extra}]'" if extra else f"install the fsspec package for {protocol}://"
        raise UserError(f"{prefix}reading {protocol}:// needs its fsspec package: {hint}") from None
    except ValueError as error:
        shown = public_text(brief(location))
        raise UserError(f"{prefix}{shown}: not a URL fsspec can read ({public_text(brief(error, 100))})") from None


class ServerError(UserError):
    """A read given up because of the server or the network, not the file: a command that reads many files from
    the same place stops at the first, since the others would fail alike (and each after the same wait)."""


def _final(error: BaseException, where: str, missing: str | None) -> UserError | None:
    """The UserError for an error no retry fixes, else None."""
    if isinstance(error, FileNotFoundError):
        return UserError(missing or f"{where}: missing (the shard dataset is incomplete: copy it again or rebuild it)")
    if isinstance(error, IsADirectoryError | NotADirectoryError):
        return UserError(f"{where}: not a file; the shard dataset is damaged: copy it again or rebuild it")
    if isinstance(error, PermissionError):
        return UserError(
            f"{where}: access refused; give this process read access (for object storage, the protocol's usual "
            "credentials in the environment, such as AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)"
        )
    return None


def with_retries(action, where: str, limits: Limits, missing: str | None = None):
    """action(), tried again after each of the limits' delays while it fails for a transient reason and the time
    since its first try leaves room for the next delay within the limits' patience; UserError when it still fails,
    or fails for a reason that waiting does not fix (a missing file: `missing`, when given, is the message)."""
    transient, tries, started = fetch.transient_errors(), 0, time.monotonic()
    while True:
        try:
            return action()
        except fetch.Refused as error:
            raise ServerError(f"{where}: {error}") from None
        except transient as error:
            final = _final(error, where, missing)
            if final is not None:
                raise final from None
            tries += 1
            elapsed = time.monotonic() - started
            if tries > len(limits.delays) or elapsed + limits.delays[tries - 1] > limits.patience_s:
                raise ServerError(
                    f"{where}: {fetch.describe(error, limits)}; gave up after {_tries(tries)} in {elapsed:.0f} s. "
                    f"Check the endpoint and the network ({ENVIRONMENT} sets the time-outs), then rerun the same "
                    "command to resume"
                ) from None
            time.sleep(limits.delays[tries - 1])


def _tries(count: int) -> str:
    return f"{count} try" if count == 1 else f"{count} tries"


def receive(fs, path: str, start: int, end: int, where: str, limits: Limits, missing: str | None = None):
    """Bytes [start, end) of a file (fewer only when it ends first) as a fetch.Received, retried from the byte
    reached."""
    received = fetch.Received()
    with_retries(lambda: fetch.read_into(fs, path, received, start, end, limits), where, limits, missing)
    return received


class BlockReader:
    """A file whose size is known (a shard: index.json lists it) read from its start, one read() at a time, through
    range requests of `block` bytes with `ahead` of them in flight: the next blocks arrive while this one is parsed,
    so each request's latency is hidden, as object stores need. Each block is retried on its own."""

    def __init__(self, fs, path: str, size: int, where: str, limits: Limits, block=READ_BLOCK_BYTES, ahead=4):
        self.fs, self.path, self.size, self.where, self.limits, self.block = fs, path, size, where, limits, block
        self.offset, self._requested = 0, 0
        self._pending: collections.deque = collections.deque()
        self._data, self._position = b"", 0
        self._pool = concurrent.futures.ThreadPoolExecutor(ahead, thread_name_prefix="ganforge-read")
        self._ahead = ahead

    def _fetch(self, start: int, end: int) -> bytes:
        received = receive(self.fs, self.path, start, end, self.where, self.limits)
        if received.size != end - start:
            raise UserError(
                f"{self.where}: ends before byte {end} of the {self.size} index.json lists; the shard is cut short "
                "or was replaced: copy it again or rebuild the shards"
            )
        return received.joined()

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


def read_whole(fs, path: str, cap: int, where: str, limits: Limits, missing: str | None = None) -> bytes:
    """A small file (an index) read whole, at most `cap` bytes: UserError if it holds more (found before its pieces
    are joined: a file at the cap costs one copy of it in memory)."""
    received = receive(fs, path, 0, cap + 1, where, limits, missing)
    if received.size > cap:
        raise UserError(f"{where}: more than the {cap} bytes such a file may take; rebuild it")
    return received.joined()
