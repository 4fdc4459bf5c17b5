"""Which names a `ganforge explore` server answers to, and so which Host headers it admits.

This stops DNS rebinding: a web page the user visits (evil.example) re-points its own name at 127.0.0.1, and the
browser then lets it read what this server answers, since for the browser it is evil.example's own server. Its
requests still say `Host: evil.example`, so only names this server is known by are admitted: the name or address it
was bound to; localhost and the loopback addresses on loopback; localhost and any address on a wildcard bind (0.0.0.0,
::): no page can re-point an address, nor localhost, only a name of its own; and the names given by --allowed-host (a
reverse proxy's, a DNS name of this machine). The port is not compared: an SSH tunnel (ssh -L 8000:127.0.0.1:PORT)
reaches the server at another one.

Plain Python (no server package): `serve` checks --allowed-host with it before it loads the networks.
"""

import dataclasses
import ipaddress
import re

from ganforge.errors import UserError
from ganforge.generate.typed import echoed

LOOPBACK_NAMES = ("localhost",)
# A Host header: a name, an IPv4 address or a bracketed IPv6 address, then an optional port
HOST_HEADER = re.compile(r"(\[[0-9a-f:.]+\]|[a-z0-9._-]+)(?::[0-9]{1,5})?")
HOST_NAME = re.compile(r"[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?")


def is_loopback(host: str) -> bool:
    """Does `host` (an address, or the name localhost) reach only this machine?"""
    if host in LOOPBACK_NAMES:
        return True
    address = _address(host)
    return address is not None and address.is_loopback


def _address(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


@dataclasses.dataclass(frozen=True)
class ServedNames:
    """The host names and addresses a Host header may name: `names` as written (lower case), `addresses` compared
    as addresses (so that ::1 and 0:0:0:0:0:0:0:1 are one), and whether any loopback address or any address at all
    names the server."""

    names: frozenset[str]
    addresses: frozenset
    any_loopback: bool
    any_address: bool

    @classmethod
    def of(cls, bound: tuple[str, ...], allowed: tuple[str, ...] = ()) -> "ServedNames":
        """The names of a server bound by `bound` (--host as given, the address it was bound to), and the names
        `allowed` by --allowed-host (checked by check_allowed)."""
        given = [name.lower() for name in (*bound, *allowed)]
        loopback = all(map(is_loopback, bound))
        everywhere = any(address.is_unspecified for address in map(_address, bound) if address is not None)
        names = {name for name in given if _address(name) is None}
        names |= set(LOOPBACK_NAMES) if loopback or everywhere else set()
        addresses = frozenset(address for address in map(_address, given) if address is not None)
        return cls(frozenset(names), addresses, loopback, everywhere)

    def admits(self, host_header: str | None) -> bool:
        """Does a request's Host header (None: it sent none) name this server?"""
        match = HOST_HEADER.fullmatch((host_header or "").lower())
        if match is None:
            return False
        name = match[1].strip("[]")
        address = _address(name)
        if address is None:
            return name in self.names
        return self.any_address or address in self.addresses or (self.any_loopback and address.is_loopback)


def check_allowed(allowed: tuple[str, ...]) -> None:
    """UserError naming the first --allowed-host value that is neither a host name nor an address."""
    bad = [name for name in allowed if not HOST_NAME.fullmatch(name.lower()) and _address(name) is None]
    if bad:
        raise UserError(f"--allowed-host {echoed(bad[0])}: not a host name or address; e.g. explore.example.com")
