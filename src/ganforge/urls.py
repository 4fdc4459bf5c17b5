"""URLs as they may leave memory: the one place that decides what of a URL is a secret.

A URL the user types may carry credentials: userinfo (`https://user:password@host/`) and signed query parameters
(S3 presigned URLs' `X-Amz-Signature` and `X-Amz-Credential`, Google Cloud's `X-Goog-*`, Azure SAS's `sig`,
CloudFront's `Signature`/`Key-Pair-Id`, and the `token=`/`key=` of many servers). The real URL stays in memory for
the request; what is recorded (config.json, logs, checkpoints, snapshot metadata, reports, tracker payloads), shown in
a message or used in a run folder's name is `public_url(url)`. Text that may quote a URL (a library's exception, a
log line) goes through `public_text`.

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
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def public_text(text: str) -> str:
    """`text` with every URL in it made public (for messages that quote a URL: a library's exception, a log line)."""
    return URL_IN_TEXT.sub(lambda match: public_url(match.group(0)), text)
