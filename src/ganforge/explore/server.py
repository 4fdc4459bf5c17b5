"""`ganforge explore` as a function: load the networks, bind the address, print the URL, serve until Ctrl-C.

Safe by default: on a loopback address (the default) only this machine can connect. Any other --host is reachable
from the network, so the server then prints a warning and requires a random token (secrets.token_urlsafe) in every
request (guards.py); the URL it prints carries it. Whatever the address, a request must name the server in its Host
header (hosts.py), and slow or idle clients cannot hold its connections (connections.py).
"""

import asyncio
import importlib.util
import socket
import sys
import warnings
from pathlib import Path

import click

from ganforge.devices import pick_device
from ganforge.errors import UserError
from ganforge.explore.hosts import ServedNames, check_allowed, is_loopback

TOKEN_BYTES = 24  # 192 bits: not guessable over the network
EXTRA = "pip install 'ganforge[explore]'"


def check_extra() -> None:
    """UserError saying how to install the server's packages when they are missing."""
    missing = [name for name in ("starlette", "uvicorn") if importlib.util.find_spec(name) is None]
    if missing:
        raise UserError(f"ganforge explore needs {' and '.join(missing)}: {EXTRA}")


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (port 0: a free one); UserError naming --host or --port when it cannot be."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as error:
        raise UserError(
            f"--host {host[:60]}: not an address of this machine ({error.strerror}); e.g. 127.0.0.1"
        ) from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen()  # asyncio listens again as it serves, and run_server once more (connections.py says why)
    except OSError as error:
        sock.close()
        raise UserError(
            f"--host {host[:60]} --port {port}: cannot listen there ({error.strerror}); choose another --port, or "
            "--port 0 for a free one"
        ) from None
    return sock


def url_of(sock: socket.socket, token: str | None) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/" + (f"?token={token}" if token else "")


def serve(
    sources: list[Path], host: str, port: int, device: str, allowed_hosts: tuple[str, ...] = (), latents=()
) -> None:
    """Serve the networks `sources` (files or run folders) and the latent files `latents` (files or folders) at
    host:port until interrupted; requests may also name the server by the host names `allowed_hosts`."""
    check_extra()
    import secrets

    from ganforge.explore.app import Explorer
    from ganforge.explore.connections import ConnectionLimits, connection_cap
    from ganforge.explore.latents import LatentFiles
    from ganforge.explore.networks import load_networks
    from ganforge.explore.rejections import Rejections
    from ganforge.explore.stopping import stopped_by_signals

    check_allowed(allowed_hosts)
    latent_files = LatentFiles(latents)
    latent_files.check()
    token = None if is_loopback(host) else secrets.token_urlsafe(TOKEN_BYTES)
    if token:
        warnings.warn(
            f"--host {host}: reachable from other machines; every request must carry the token in the printed URL. "
            "An SSH tunnel to 127.0.0.1 is safer (ssh -L 8000:127.0.0.1:PORT host)",
            stacklevel=2,
        )
    limits = ConnectionLimits(cap=connection_cap())
    chosen = pick_device(device)
    explorer = Explorer(load_networks(sources, chosen), chosen, latent_files)
    sock = bind(host, port)
    click.echo(f"ganforge explore: {url_of(sock, token)} ({len(sources)} network(s) on {chosen}; Ctrl-C stops)")
    sys.stdout.flush()
    served = ServedNames.of((host, sock.getsockname()[0]), allowed_hosts)
    rejections = Rejections()
    server = web_server(explorer, sock, served, token, limits, rejections)
    try:
        with stopped_by_signals(server):
            asyncio.run(run_server(server, sock, rejections))
    finally:
        rejections.flush()


def web_server(explorer, sock: socket.socket, served: ServedNames, token: str | None, limits, rejections):
    """The uvicorn server of `explorer` on the bound `sock`: every request's Host checked against `served`, then its
    token (when there is one); its connections held to `limits`; what it refuses counted in `rejections`. uvicorn's
    own warnings (a line per bad request) are left out: `rejections` sums them up."""
    import uvicorn

    from ganforge.explore.app import build_app
    from ganforge.explore.connections import ACCEPT_BATCH, Connections, protocol_factory
    from ganforge.explore.guards import HostGuard, TokenGuard
    from ganforge.explore.stopping import SignalFreeServer

    port = sock.getsockname()[1]
    app = HostGuard(TokenGuard(build_app(explorer), token, port, rejections), served, rejections)
    protocol = protocol_factory(Connections(limits, rejections))
    config = uvicorn.Config(
        app, http=protocol, backlog=ACCEPT_BATCH, log_level="error", access_log=False, lifespan="off"
    )
    return SignalFreeServer(config)


async def run_server(server, sock: socket.socket, rejections) -> None:
    """Run the uvicorn `server` on `sock` until it stops, accept() failures counted in `rejections`; once it
    serves, the kernel's queue of connections is lengthened beyond the batch asyncio accepts at a time."""
    from ganforge.explore.connections import KERNEL_QUEUE, loop_exception_handler

    asyncio.get_running_loop().set_exception_handler(loop_exception_handler(rejections))
    serving = asyncio.ensure_future(server.serve(sockets=[sock]))
    while not (server.started or serving.done()):
        await asyncio.sleep(0.01)
    if sock.fileno() != -1:  # a Ctrl-C just after the start may have shut the server, and its socket, already
        sock.listen(KERNEL_QUEUE)
    await serving
