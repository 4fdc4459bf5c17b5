"""How long a read from object storage or a web server may take, and how long its retries may go on.

Every request has a connect time-out, a read time-out (the longest silence while an answer is due) and a deadline
(the whole request, its last byte included: a server that drips one byte a second never trips the read time-out).
A read that fails for a transient reason is tried again after each of `delays`, while the next try would start within
`patience_s` of its first: about a minute of patience in all (a server that answers nothing is given up after about
63 s), and a request that drips is given up at its deadline.

The environment variable GANFORGE_REMOTE_LIMITS changes them, for a link slower than the defaults allow, or for tests
that meet a silent server and should not wait a minute: comma-separated NAME=SECONDS of connect, read, request and
patience, e.g. `GANFORGE_REMOTE_LIMITS=read=120,request=1800`.
"""

import dataclasses
import math
import os

from ganforge.errors import UserError

ENVIRONMENT = "GANFORGE_REMOTE_LIMITS"
# Seconds to wait before each retry, doubling as is usual for object stores.
RETRY_DELAYS_S = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
_FIELDS = {"connect": "connect_s", "read": "read_s", "request": "request_s", "patience": "patience_s"}
_MAX_SECONDS = 86400.0


@dataclasses.dataclass(frozen=True)
class Limits:
    connect_s: float = 10.0  # to open a connection (TCP and TLS)
    read_s: float = 20.0  # the longest silence while an answer or its next bytes are due
    request_s: float = 300.0  # one request, whole: an 8 MiB block needs ~28 KB/s (four in flight: ~0.9 Mbit/s)
    patience_s: float = 64.0  # no retry starts later than this after a read's first try: room for every delay
    delays: tuple[float, ...] = RETRY_DELAYS_S


def from_environment() -> Limits:
    """The default limits, with what GANFORGE_REMOTE_LIMITS sets; UserError naming the variable when it is not
    NAME=SECONDS pairs of known names and positive, finite numbers of seconds."""
    text = os.environ.get(ENVIRONMENT, "").strip()
    if not text:
        return Limits()
    values, problems = {}, []
    for item in text.split(","):
        name, _, number = item.partition("=")
        seconds = _seconds(number)
        if name.strip() not in _FIELDS or seconds is None:
            problems.append(
                f"{ENVIRONMENT}: {item.strip()[:40]!r} is not NAME=SECONDS with NAME one of {', '.join(_FIELDS)} "
                f"and SECONDS above 0 and at most {_MAX_SECONDS:g}"
            )
        else:
            values[_FIELDS[name.strip()]] = seconds
    if problems:
        raise UserError(*problems)
    return Limits(**values)


def _seconds(text: str) -> float | None:
    try:
        seconds = float(text)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and 0 < seconds <= _MAX_SECONDS else None
