"""`hermes-procs web`: the dashboard in a browser, through textual-serve.

textual-serve starts one dashboard process per browser connection (`hermes_procs.tui.web_app`,
with ``--read-only`` when asked: the refusal happens in that server-side process) and relays
the terminal over a WebSocket.  Its routes (the page, ``ws``, ``static/``) are mounted under the
guard's secret prefix; ``/`` only logs in.  Every request first passes
:class:`~.web_guard.Guard` (Host, Origin, path, token).  The server binds loopback unless the
caller allowed more (the CLI checks ``--allow-remote``).
"""

from __future__ import annotations

import asyncio
import errno
import logging
import shlex
import signal
import sys
from pathlib import Path
from typing import Any

import aiohttp_jinja2
from aiohttp import web
from textual_serve.server import Server

from hermes_procs.core.supervisor.text import safe_line

from .web_guard import Guard, is_loopback, new_token, private_headers, url_host
from .web_sessions import HEADER_TIMEOUT, MAX_SESSIONS, Sessions

TEMPLATES = Path(__file__).parent / "web_templates"  # the page: textual-serve's, made self-contained


MAX_ERROR_LINES = 20


class _OneLineErrors(logging.Handler):
    """aiohttp's errors as one sanitised line each on stderr (what a request sent is hostile)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.shown = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.shown += 1
        if self.shown > MAX_ERROR_LINES:
            return
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            text += f": {type(exc).__name__}: {exc}"
        tail = " (further errors are not shown)" if self.shown == MAX_ERROR_LINES else ""
        sys.stderr.write(f"hermes-procs: web: {safe_line(text)[:300]}{tail}\n")


class WebServer(Server):
    """textual-serve's Server behind the guard, quiet, with URLs taken from the (checked) Host."""

    def __init__(self, command: str, host: str, port: int, token: str, max_sessions: int = MAX_SESSIONS) -> None:
        super().__init__(command, host=host, port=port, title="hermes-procs", templates_path=TEMPLATES)
        self.token = token
        self.guard: Guard | None = None
        self.sessions = Sessions(self, max_sessions)

    def initialize_logging(self) -> None:
        """No per-request log lines: the terminal shows the URL and errors only, each error one
        line (aiohttp's own, of a malformed request anyone on the machine may send, came with a
        22-line traceback) and at most MAX_ERROR_LINES of them."""
        handler = _OneLineErrors()
        for name in ("aiohttp.server", "aiohttp.web", "aiohttp.access"):
            log = logging.getLogger(name)
            log.handlers[:] = [handler]
            log.propagate = False

    async def on_startup(self, app: web.Application) -> None:
        """No banner: `serve` prints the URL once the port is known."""

    async def _make_app(self) -> web.Application:
        """textual-serve's routes under the secret prefix, ``/`` to log in, the guard in front."""
        assert self.guard is not None
        app = web.Application(middlewares=[self.guard.middleware])
        app.router.add_get("/", self.guard.login)
        app.add_subapp(self.guard.prefix, await super()._make_app())
        app.on_response_prepare.append(private_headers)
        return app

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        """A dashboard process for this connection: capped, its terminal size clamped."""
        return await self.sessions.handle(request)

    @aiohttp_jinja2.template("app_index.html")
    async def handle_index(self, request: web.Request) -> dict[str, Any]:
        """The page; its WebSocket and static URLs use the Host the browser used (checked)."""
        base = f"{request.scheme}://{request.host}"
        router = request.app.router
        return {
            "font_size": 16,
            "app_websocket_url": f"{base}{router['websocket'].url_for()}",
            "config": {"static": {"url": f"{base}{str(router['static'].url_for(filename='x'))[:-1]}"}},
            "application": {"name": self.title},
        }


def app_command(home: str | None, read_only: bool) -> str:
    """The shell command textual-serve runs for each browser connection (``exec``: the dashboard
    is the server's own child, which it can kill and which dies with it)."""
    argv = [sys.executable, "-m", "hermes_procs.tui.web_app"]
    if home:
        argv += ["--home", home]
    if read_only:
        argv.append("--read-only")
    return "exec " + shlex.join(argv)


async def _serve(server: WebServer, stop: asyncio.Event) -> None:
    server.initialize_logging()
    app = await server._make_app()
    runner = web.AppRunner(app, handle_signals=False, access_log=None, keepalive_timeout=HEADER_TIMEOUT)
    await runner.setup()
    try:
        site = web.TCPSite(runner, server.host, server.port)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        server.port = port
        assert server.guard is not None
        server.guard.bind(server.host, port)
        _announce(server.host, port, server.token)
        await stop.wait()
    finally:
        await runner.cleanup()


def _announce(host: str, port: int, token: str) -> None:
    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else url_host(host)
    lines = [f"hermes-procs web: serving the dashboard on http://{url_host(host)}:{port}/",
             "Open this URL in a browser (the token is required; keep it secret):",
             f"    http://{shown}:{port}/?token={token}"]
    if not is_loopback(host):
        lines += ["Bound to a non-loopback address (--allow-remote): traffic is plain HTTP. Prefer an SSH tunnel",
                  f"    ssh -L {port}:127.0.0.1:{port} THIS-HOST   (and serve on 127.0.0.1)",
                  "or put it behind a TLS reverse proxy (caddy, nginx) that forwards the Host header."]
    lines.append("Press Ctrl+C to stop.")
    print("\n".join(lines), flush=True)


def _fail(message: str) -> int:
    print(f"hermes-procs: error: {message}", file=sys.stderr)
    return 1


def serve(home: str | None = None, host: str = "127.0.0.1", port: int = 8765, read_only: bool = False,
          allow_remote: bool = False, max_sessions: int = MAX_SESSIONS) -> int:
    """Serve the dashboard until SIGINT/SIGTERM; returns the exit status (1 and one stderr line
    when the address may not or cannot be bound).  Port 0 picks a free port (the URL shows it).
    At most ``max_sessions`` dashboards (browser tabs) run at once."""
    if not is_loopback(host) and not allow_remote:
        return _fail(f"refusing to bind non-loopback address {host} without --allow-remote "
                     f"(or keep 127.0.0.1 and use `ssh -L {port or 8765}:127.0.0.1:{port or 8765} HOST`)")
    server = WebServer(app_command(home, read_only), host, port, new_token(), max_sessions)
    server.guard = Guard(host, port, server.token)

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await _serve(server, stop)

    try:
        asyncio.run(main())
    except OSError as exc:
        hint = " (another port: --port N; --port 0 picks a free one)" if exc.errno == errno.EADDRINUSE else ""
        return _fail(f"cannot serve on {url_host(host)}:{port}: {exc.strerror or exc}{hint}")
    return 0
