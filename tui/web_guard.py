"""The door of `hermes-procs web`: every HTTP and WebSocket request passes here first.

Checked in this order, each refusal a plain-text 403 with one line saying why:

1. the Host header names this server: the bound address or localhost / 127.0.0.1 / [::1], with
   the bound port (a DNS-rebinding page reaches us under its own name and is refused); on a
   wildcard bind (0.0.0.0, ::) any IP literal with the port, never a name;
2. the Origin header, when present, is ``http(s)://`` + an allowed host (another site's page
   cannot open our WebSocket);
3. the token printed at start: ``?token=`` once (then an HttpOnly SameSite=Strict cookie is
   set) or that cookie.
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

    def __init__(self, host: str, port: int, token: str) -> None:
        self.token = token
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
            parts = urlsplit(origin)
            if parts.scheme not in ("http", "https") or not self.host_ok(parts.netloc):
                return f"forbidden: Origin {origin!r} is not this server"
        given = request.query.get("token")
        if given is not None:
            if not secrets.compare_digest(given.encode(), self.token.encode()):
                return "forbidden: wrong token (use the URL printed by `hermes-procs web`)"
            return None
        cookie = request.cookies.get(self.cookie)
        if cookie is None:
            return "forbidden: no token (open the URL printed by `hermes-procs web`, with its ?token=...)"
        if not secrets.compare_digest(cookie.encode(), self.token.encode()):
            return "forbidden: wrong token in cookie (open the URL printed by `hermes-procs web` again)"
        return None

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """The aiohttp middleware: refuse with a one-line 403, or pass and set the cookie."""
        why = self.refusal(request)
        if why is not None:
            return web.Response(status=403, text=why + "\n", content_type="text/plain")
        response = await handler(request)
        if "token" in request.query and not response.prepared:
            response.set_cookie(self.cookie, self.token, httponly=True, samesite="Strict", path="/")
        return response
