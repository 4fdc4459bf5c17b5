"""What a request must show before it reaches the page or the API: a Host header naming this server (hosts.py says
which names do, and why), and, on an address beyond loopback, the token printed in the URL. Both are ASGI middleware,
checked before any route; each refusal is counted in the server's Rejections.
"""

import secrets
import urllib.parse

from starlette.datastructures import MutableHeaders
from starlette.requests import cookie_parser
from starlette.responses import PlainTextResponse

from ganforge.explore.hosts import ServedNames
from ganforge.generate.typed import echoed

TOKEN_REFUSED = "forbidden: open the URL ganforge explore printed, token included"


class HostGuard:
    """ASGI middleware: 403 for every request whose Host header does not name this server (`served`), counted in
    `rejections`."""

    def __init__(self, app, served: ServedNames, rejections):
        self.app, self.served, self.rejections = app, served, rejections

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            host = _single_header(scope, b"host")
            if not self.served.admits(host):
                self.rejections.note("requests refused for naming another host (a web page's, by DNS rebinding?)", host)
                message = (
                    f"forbidden: Host {echoed(host or 'missing', 60)!r} is not a name of this server; open the URL "
                    "ganforge explore printed, or start it with --allowed-host NAME"
                )
                await PlainTextResponse(message, 403)(scope, receive, send)
                return
        await self.app(scope, receive, send)


class TokenGuard:
    """ASGI middleware: 403 for every request that does not carry the token (when the server has one), counted in
    `rejections`. The printed URL carries it as ?token=; a request that does so is answered with a cookie holding it
    (HttpOnly, SameSite=Strict, named for the port: cookies do not tell ports apart), which the page's own files and
    requests then carry. A client may also send `Authorization: Bearer TOKEN`."""

    def __init__(self, app, token: str | None, port: int, rejections):
        self.app, self.token, self.rejections = app, token, rejections
        self.cookie = f"ganforge-explore-token-{port}"

    async def __call__(self, scope, receive, send):
        if self.token is None or scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self._in_query(scope):
            await self.app(scope, receive, self._setting_cookie(send))
        elif self._in_cookie_or_header(scope):
            await self.app(scope, receive, send)
        else:
            self.rejections.note("requests refused without the token")
            await PlainTextResponse(TOKEN_REFUSED, 403)(scope, receive, send)

    def _is_token(self, given: str) -> bool:
        return secrets.compare_digest(given.encode(), self.token.encode())

    def _in_query(self, scope) -> bool:
        pairs = urllib.parse.parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = [value for name, value in pairs if name == "token"]
        return len(given) == 1 and self._is_token(given[0])

    def _in_cookie_or_header(self, scope) -> bool:
        cookie = cookie_parser(_single_header(scope, b"cookie") or "").get(self.cookie)
        authorization = _single_header(scope, b"authorization") or ""
        bearer = authorization.removeprefix("Bearer ") if authorization.startswith("Bearer ") else None
        return any(self._is_token(given) for given in (cookie, bearer) if given)

    def _setting_cookie(self, send):
        async def send_with_cookie(message):
            if message["type"] == "http.response.start":
                cookie = f"{self.cookie}={self.token}; Path=/; HttpOnly; SameSite=Strict"
                MutableHeaders(scope=message).append("set-cookie", cookie)
            await send(message)

        return send_with_cookie


def _single_header(scope, name: bytes) -> str | None:
    """The value of a header a request sent once; None when it sent none, or several (which then disagree)."""
    values = [value for key, value in scope["headers"] if key == name]
    return values[0].decode("latin-1") if len(values) == 1 else None
