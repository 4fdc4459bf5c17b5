"""How many connections `ganforge explore` holds, and for how long one may take to send its request.

A client that connects and sends its request slowly, or never, holds a socket, and uvicorn waits for it without a
deadline; a thousand of them used to exhaust the process's file descriptors, after which every accept() failed (and
asyncio logged a traceback for each) while normal requests timed out. So:

- at most `cap` connections are open, fewer than the process may open files (the soft limit is raised towards the
  hard one first), so accept() never fails;
- a connection waiting for a request (just opened, half-sent, or idle between requests) is closed when its request
  has not fully arrived `read_deadline_s` after it began waiting;
- a connection beyond the cap closes the oldest waiting one, so that a new request is answered however many slow
  clients hold sockets; only when every open connection has a request in progress is the new one refused (503);
- each of these is counted in `Rejections`, which writes one line per burst.

uvicorn's own `limit_concurrency` cannot do this: it answers 503 only once a whole request has arrived, and never
closes a connection that sends none. Its other limits stay: an idle keep-alive connection closes after
`timeout_keep_alive` (5 s), and a request head larger than h11's 16 KiB is refused with 400.
"""

import collections
import dataclasses
import functools
import resource
import warnings

from uvicorn.protocols.http.h11_impl import H11Protocol

from ganforge.errors import UserError
from ganforge.explore.rejections import Rejections

MAX_CONNECTIONS = 512  # a browser opens at most 6 per server; room for many tabs and users
MIN_CONNECTIONS = 16
READ_DEADLINE_S = 10.0  # a browser sends a request in one packet; a slow link still delivers it in a few seconds
# asyncio accepts up to `backlog` connections at a time before their protocols see them, and closes a socket an
# event-loop turn after its transport is closed: a few batches of sockets besides the cap are open at any moment.
ACCEPT_BATCH = 128  # uvicorn's backlog, which asyncio takes for its accept() batch and its listen() queue
IN_FLIGHT_FILES = 4 * ACCEPT_BATCH
RESERVED_FILES = 64  # file descriptors kept for all but connections (the server holds ~10 once serving)
# Connections the kernel queues until they are accepted, holding no descriptor of this process. A new one waits its
# turn behind those queued, or, when the queue is full, is dropped and tried again a second later: under a flood of
# reconnecting slow clients a queue of 1,024 answered normal requests faster than one of 128 (drops) or 4,096 (waits).
KERNEL_QUEUE = 1024
ACCEPT_FAILED = "socket.accept() out of system resource"  # asyncio's message when accept() finds no descriptor
BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 32\r\nRetry-After: 1\r\n"
    b"Connection: close\r\n\r\nbusy: every connection is in use"
)


@dataclasses.dataclass(frozen=True)
class ConnectionLimits:
    cap: int = MAX_CONNECTIONS
    read_deadline_s: float = READ_DEADLINE_S


def connection_cap(wanted: int = MAX_CONNECTIONS) -> int:
    """The connections this process can hold besides its other files: `wanted`, after raising the soft limit on open
    files towards the hard one when it is lower; fewer (with a warning) when the hard limit is lower still."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    others = IN_FLIGHT_FILES + RESERVED_FILES
    needed = wanted + others
    if soft != resource.RLIM_INFINITY and soft < needed:
        raised = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
        soft = raised
    cap = wanted if soft == resource.RLIM_INFINITY else min(wanted, soft - others)
    if cap < MIN_CONNECTIONS:
        raise UserError(
            f"ulimit -n {soft}: ganforge explore needs at least {MIN_CONNECTIONS + others} open files; raise the "
            f"limit (ulimit -n {needed})"
        )
    if cap < wanted:
        warnings.warn(f"ulimit -n {soft}: serving at most {cap} connections at once", stacklevel=2)
    return cap


class Connections:
    """The open connections of one server and, oldest first, those waiting for a request, each with the timer that
    closes it at the read deadline."""

    def __init__(self, limits: ConnectionLimits, rejections: Rejections):
        self.limits, self.rejections = limits, rejections
        self.open: set = set()
        self.waiting: collections.OrderedDict = collections.OrderedDict()  # protocol -> its deadline's TimerHandle

    def opened(self, protocol) -> None:
        """A new connection: kept (waiting for its request) when there is room or a waiting one to close; else
        answered 503 and closed."""
        if len(self.open) >= self.limits.cap:
            if not self.waiting:
                self.rejections.note(f"connections refused (503): all {self.limits.cap} had a request in progress")
                protocol.transport.write(BUSY)
                protocol.transport.close()
                return
            oldest, _ = self.waiting.popitem(last=False)
            self.rejections.note(
                f"idle or half-sent connections closed for newer ones (at most {self.limits.cap} open)"
            )
            self._close(oldest)
        self.open.add(protocol)
        self.wait(protocol)

    def wait(self, protocol) -> None:
        """`protocol` waits for a request, from now until the read deadline."""
        self.busy(protocol)
        if protocol in self.open:
            deadline = protocol.loop.call_later(self.limits.read_deadline_s, self._expire, protocol)
            self.waiting[protocol] = deadline

    def busy(self, protocol) -> None:
        """A request of `protocol` has arrived whole: no deadline until it is answered."""
        deadline = self.waiting.pop(protocol, None)
        if deadline is not None:
            deadline.cancel()

    def _expire(self, protocol) -> None:
        if self.waiting.pop(protocol, None) is not None:
            self.rejections.note(f"connections closed that sent no whole request in {self.limits.read_deadline_s:g} s")
            self._close(protocol)

    def _close(self, protocol) -> None:
        self.busy(protocol)
        self.open.discard(protocol)
        protocol.transport.close()

    def closed(self, protocol) -> None:
        self.busy(protocol)
        self.open.discard(protocol)


class GuardedH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, its connection kept in `Connections`: waiting from connect and after each response,
    busy while a request is in progress."""

    def __init__(self, *args, book: Connections, **kwargs):
        super().__init__(*args, **kwargs)
        self.book = book

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        self.book.opened(self)

    def connection_lost(self, exc) -> None:
        self.book.closed(self)
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        if self.cycle is not None and not self.cycle.response_complete:
            self.book.busy(self)

    def on_response_complete(self) -> None:
        self.book.wait(self)  # before uvicorn reads a pipelined request, which makes it busy again
        super().on_response_complete()

    def send_400_response(self, msg: str) -> None:
        self.book.rejections.note("invalid HTTP requests refused (400)")
        super().send_400_response(msg)


def protocol_factory(book: Connections):
    """What uvicorn's Config takes as `http`: it calls it with the config and the server's state per connection."""
    return functools.partial(GuardedH11Protocol, book=book)


def loop_exception_handler(rejections: Rejections):
    """An asyncio exception handler that counts accept() finding no free file descriptor (asyncio then pauses
    accepting for a second) in `rejections`, where asyncio would log a traceback for every connection it could not
    accept; every other exception goes to asyncio's own handler."""

    def handle(loop, context: dict) -> None:
        if context.get("message") == ACCEPT_FAILED:
            rejections.note("connections not accepted: no file descriptor was free")
        else:
            loop.default_exception_handler(context)

    return handle
