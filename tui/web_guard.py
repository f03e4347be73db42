"""The door of `hermes-procs web`: every HTTP and WebSocket request passes here first.

Checked in this order, each refusal a plain-text 403 with one line saying why:

1. the Host header names this server: the bound address or localhost / 127.0.0.1 / [::1], with
   the bound port (a DNS-rebinding page reaches us under its own name and is refused); on a
   wildcard bind (0.0.0.0, ::) any IP literal with the port, never a name;
2. the Origin header, when present, is ``http(s)://`` + an allowed host (another site's page
   cannot open our WebSocket);
3. the path: ``/`` (where the printed URL logs in) or under the secret prefix ``/<random>/``
   where every page, WebSocket and file of the dashboard lives;
4. the token printed at start: ``/?token=`` logs in (a redirect to the prefix, setting an
   HttpOnly SameSite=Strict cookie whose ``Path`` is the prefix), then that cookie (or
   ``?token=``) under the prefix.

Why a secret prefix: browsers send a cookie of 127.0.0.1 to *every* port of it, whatever its
SameSite, so a cookie with ``Path=/`` went to any other local server the browser visited.  A
cookie scoped to a path nobody else knows is sent to no other server; the prefix alone (in the
address bar and history) lets nobody in without the cookie.
"""

from __future__ import annotations

import ipaddress
import secrets
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

from aiohttp import web

LOCAL_NAMES = ("localhost", "127.0.0.1", "[::1]")
WILDCARDS = ("0.0.0.0", "::", "")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def new_token() -> str:
    """A fresh random token for one start of the server."""
    return secrets.token_urlsafe(24)


def url_host(host: str) -> str:
    """``host`` as written in a URL: IPv6 literals in brackets."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def is_loopback(host: str) -> bool:
    """True for localhost and loopback IP literals (what may be bound without --allow-remote)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _is_ip_literal(name: str) -> bool:
    try:
        ipaddress.ip_address(name.strip("[]"))
        return True
    except ValueError:
        return False


class Guard:
    """The checks for one server: bound ``host``/``port`` and its ``token``."""

    def __init__(self, host: str, port: int, token: str, prefix: str | None = None) -> None:
        self.token = token
        self.prefix = f"/{prefix or new_token()}/"  # the secret path the dashboard lives under
        self.bind(host, port)

    def bind(self, host: str, port: int) -> None:
        """Set the address the server listens on (again once port 0 got its real number)."""
        self.port = port
        self.cookie = f"hermes_procs_token_{port}"  # cookies ignore ports: one name per server
        self.wildcard = host in WILDCARDS
        self.hosts = {f"{name}:{port}" for name in (*LOCAL_NAMES, url_host(host))}

    def host_ok(self, host: str) -> bool:
        host = host.lower()
        if host in self.hosts:
            return True
        if not self.wildcard:
            return False
        name, _, port = host.rpartition(":")
        return port == str(self.port) and _is_ip_literal(name)

    def refusal(self, request: web.Request) -> str | None:
        """Why ``request`` is refused, or None when it may pass."""
        host = request.headers.get("Host", "")
        if not self.host_ok(host):
            return f"forbidden: Host header {host!r} is not this server (DNS rebinding protection)"
        origin = request.headers.get("Origin")
        if origin is not None:
            try:
                parts = urlsplit(origin)
            except ValueError:  # `http://[::1` and the like: not a URL, so not this server
                return f"forbidden: Origin {origin!r} is not this server"
            if parts.scheme not in ("http", "https") or not self.host_ok(parts.netloc):
                return f"forbidden: Origin {origin!r} is not this server"
        path = request.rel_url.raw_path
        if path != "/" and not path.startswith(self.prefix):
            return "forbidden: not a page of this server (open the URL printed by `hermes-procs web`)"
        given = request.query.get("token")
        if given is not None:
            if not self._is_token(given):
                return "forbidden: wrong token (use the URL printed by `hermes-procs web`)"
            return None
        cookies = self._cookies(request) if path != "/" else []
        if not cookies:
            return "forbidden: no token (open the URL printed by `hermes-procs web`, with its ?token=...)"
        if not any(self._is_token(value) for value in cookies):
            return "forbidden: wrong token in cookie (open the URL printed by `hermes-procs web` again)"
        return None

    def _is_token(self, given: str) -> bool:
        # surrogateescape: a header's bytes that are not UTF-8 are compared, not an encoding error
        return secrets.compare_digest(given.encode("utf-8", "surrogateescape"), self.token.encode())

    def _cookies(self, request: web.Request) -> list[str]:
        """Every value sent for our cookie name: another local server may set one of the same name
        with a shorter path (sent after ours), and it must not push ours out."""
        values = []
        for header in request.headers.getall("Cookie", []):
            for pair in header.split(";"):
                name, _, value = pair.strip().partition("=")
                if name == self.cookie:
                    values.append(value.strip('"'))
        return values

    async def login(self, request: web.Request) -> web.StreamResponse:
        """``/?token=`` (checked by the middleware): the cookie, scoped to the secret prefix, and
        a redirect there (the address bar then holds no token)."""
        response = web.HTTPSeeOther(self.prefix)
        response.set_cookie(self.cookie, self.token, httponly=True, samesite="Strict", path=self.prefix)
        return response

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """The aiohttp middleware: refuse with a one-line 403, or pass."""
        why = self.refusal(request)
        if why is not None:
            return web.Response(status=403, text=why + "\n", content_type="text/plain")
        return await handler(request)


async def private_headers(request: web.Request, response: web.StreamResponse) -> None:
    """On every response (pages, files, the WebSocket handshake, refusals): never cached, and no
    Referer (with the secret prefix in it) sent to another site from our pages."""
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cache-Control"] = "no-store"
