"""One owner of Ctrl-C and SIGTERM while explore serves. uvicorn captures both itself, and asyncio.run installs its
own Ctrl-C handler that cancels the main task; with two owners, a signal's outcome depended on its moment (during
uvicorn's start: a traceback or a hang; after its shutdown: a cancel lost and exit 0). Here the server never touches
signals, and the handler below only asks it to stop, whatever it is doing at that moment."""

import contextlib
import signal

import uvicorn

STOPPING_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class SignalFreeServer(uvicorn.Server):
    """uvicorn's server, leaving signals to `stopped_by_signals`."""

    @contextlib.contextmanager
    def capture_signals(self):
        yield


@contextlib.contextmanager
def stopped_by_signals(server: uvicorn.Server):
    """While the block runs, Ctrl-C and SIGTERM ask `server` to stop (a second Ctrl-C: without waiting for open
    connections); asyncio.run sees a handler already there and installs none. On the way out the first signal is
    raised again as its default would have done: KeyboardInterrupt for Ctrl-C (the CLI's exit 130), and SIGTERM to
    the handler that was there before (the CLI's exit 143)."""
    received: list[int] = []

    def stop(signum, frame):
        if received and signum == signal.SIGINT:
            server.force_exit = True
        received.append(signum)
        server.should_exit = True

    previous = {sig: signal.signal(sig, stop) for sig in STOPPING_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if received and received[0] == signal.SIGINT:
        raise KeyboardInterrupt
    if received:
        signal.raise_signal(received[0])
