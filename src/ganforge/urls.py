"""URLs as they may leave memory: the one place that decides what of a URL is a secret.

A URL the user types may carry credentials: userinfo (`https://user:password@host/`) and signed query parameters
(S3 presigned URLs' `X-Amz-Signature` and `X-Amz-Credential`, Google Cloud's `X-Goog-*`, Azure SAS's `sig`,
CloudFront's `Signature`/`Key-Pair-Id`, and the `token=`/`key=` of many servers). The real URL stays in memory for
the request; what is recorded (config.json, logs, checkpoints, snapshot metadata, reports, tracker payloads), shown in
a message or used in a run folder's name is `public_url(url)`. Text that may quote a URL (a library's exception, a
log line) goes through `public_text`, a recorded structure (a configuration) through `public_value`; a name made from
a URL (a run folder's) is `path_name(url)`, its last path segment.

What counts as secret errs wide: a query parameter is withheld when its name contains any of SECRET_PARTS or starts
with a cloud's signing prefix, whatever the value; a parameter that merely selects (`page=2`, `versionId=…`) stays.
"""

import re
import urllib.parse

REDACTED = "REDACTED"
# Lower-cased fragments of query parameter names that carry a secret or a signature.
SECRET_PARTS = ("sig", "token", "key", "pass", "pwd", "secret", "auth", "credential", "session", "policy", "code")
SECRET_PREFIXES = ("x-amz-", "x-goog-", "x-ms-")
URL_IN_TEXT = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,15}://[^\s'\"<>`]+")
URL_START = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,15}://")
# What ends a sentence rather than a URL quoted in it (`see http://host:8080: refused`).
TRAILING = ".,;:!?)"


def secret_parameter(name: str) -> bool:
    """Is a query parameter of this name withheld from everything recorded or shown?"""
    lowered = name.lower()
    return lowered.startswith(SECRET_PREFIXES) or any(part in lowered for part in SECRET_PARTS)


def public_url(url: str) -> str:
    """`url` without its userinfo, with the value of every secret query parameter replaced by REDACTED. A string
    that is not a URL (a local path) is returned as it is."""
    if "://" not in url:
        return url
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:  # an unparseable netloc (a bad port, a bracket): nothing of it is kept
        scheme = url.split("://", 1)[0]
        return f"{scheme}://{REDACTED}"
    netloc = f"[{host}]" if ":" in host else host
    if port is not None:
        netloc += f":{port}"
    pairs = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    query = "&".join(
        f"{urllib.parse.quote(name, safe='')}={REDACTED if secret_parameter(name) else urllib.parse.quote(value)}"
        for name, value in pairs
    )
    fragment = REDACTED if parts.fragment else ""  # an OAuth implicit grant returns its token here
    # Put together by hand: urlunsplit drops the empty host of sqlite:////abs/path, turning it into a relative path.
    return (
        f"{parts.scheme}://{netloc}{parts.path}" + (f"?{query}" if query else "") + (f"#{fragment}" if fragment else "")
    )


def public_text(text: str) -> str:
    """`text` with every URL in it made public (for messages that quote a URL: a library's exception, a log line).
    Punctuation that ends a URL quoted in a sentence stays outside it."""
    return URL_IN_TEXT.sub(_public_match, text)


def _public_match(match: re.Match) -> str:
    quoted = match.group(0)
    url = quoted.rstrip(TRAILING)
    return public_url(url) + quoted[len(url) :]


def public_value(value):
    """A recorded structure (dicts, lists and tuples of strings, numbers, None) with every string in it made public:
    a string that is a URL by `public_url` (a URL may hold a space), any other by `public_text`."""
    if isinstance(value, str):
        return public_url(value) if URL_START.match(value) else public_text(value)
    if isinstance(value, dict):
        return {key: public_value(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(public_value(item) for item in value)
    return value


def path_name(location: str) -> str:
    """The last segment of the path `location` names, "" when it has none: of a URL, of its path alone, never of its
    host, userinfo, query or fragment (what a run folder's name may take from a URL)."""
    if URL_START.match(location):  # split by hand: a URL too damaged for urlsplit still has no name to leak
        after_scheme = location.split("://", 1)[1]
        location = re.split(r"[?#]", after_scheme, maxsplit=1)[0].partition("/")[2]
    return location.rstrip("/").rsplit("/", 1)[-1]
