"""`ganforge explore` as a function: load the networks, bind the address, print the URL, serve until Ctrl-C.

Safe by default: on a loopback address (the default) only this machine can connect. Any other --host is reachable
from the network, so the server then prints a warning and requires a random token (secrets.token_urlsafe) in every
request's query; the URL it prints carries it.
"""

import importlib.util
import ipaddress
import socket
import sys
import warnings
from pathlib import Path

import click

from ganforge.devices import pick_device
from ganforge.errors import UserError

LOOPBACK_NAMES = ("localhost",)
TOKEN_BYTES = 24  # 192 bits: not guessable over the network
EXTRA = "pip install 'ganforge[explore]'"


def is_loopback(host: str) -> bool:
    """Does `host` (an address, or the name localhost) reach only this machine?"""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


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
        sock.listen(128)
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


def serve(sources: list[Path], host: str, port: int, device: str) -> None:
    """Serve the networks `sources` (files or run folders) at host:port until interrupted."""
    check_extra()
    import secrets

    import uvicorn

    from ganforge.explore.app import Explorer, build_app
    from ganforge.explore.networks import load_networks

    token = None if is_loopback(host) else secrets.token_urlsafe(TOKEN_BYTES)
    if token:
        warnings.warn(
            f"--host {host}: reachable from other machines; every request must carry the token in the printed URL. "
            "An SSH tunnel to 127.0.0.1 is safer (ssh -L 8000:127.0.0.1:PORT host)",
            stacklevel=2,
        )
    chosen = pick_device(device)
    explorer = Explorer(load_networks(sources, chosen), chosen, token)
    sock = bind(host, port)
    click.echo(f"ganforge explore: {url_of(sock, token)} ({len(sources)} network(s) on {chosen}; Ctrl-C stops)")
    sys.stdout.flush()
    config = uvicorn.Config(build_app(explorer), log_level="warning", access_log=False, lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])
