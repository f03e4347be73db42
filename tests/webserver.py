"""For the web tests: a real `hermes-procs web --port 0` process and raw HTTP requests to it, Debian's
chromium driven by Playwright, and a second loopback server that records what it receives."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import http.server
import os
import re
import signal
import subprocess
import sys
import threading
import time

import aiohttp
import pytest
from conftest import wait_until

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]

URL_RE = re.compile(r"http://127\.0\.0\.1:(\d+)/\?token=([\w-]+)")


class Served:
    """A running `hermes-procs web --port 0` and what it printed."""

    def __init__(self, home, *extra: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "hermes_procs", "--home", str(home), "web", "--port", "0", *extra],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.printed: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        match = wait_until(lambda: next(filter(None, map(URL_RE.search, list(self.printed))), None),
                           timeout=30)
        self.port, self.token = int(match.group(1)), match.group(2)
        self.url = match.group(0)  # the printed URL, with its token

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.printed.append(line)

    def request(self, path: str = "/", headers: dict | None = None) -> http.client.HTTPResponse:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=20)
        hdrs = {"Host": f"127.0.0.1:{self.port}"}
        hdrs.update(headers or {})
        conn.request("GET", path, headers=hdrs)
        resp = conn.getresponse()
        resp.body = resp.read().decode()  # type: ignore[attr-defined]
        conn.close()
        return resp

    def login(self) -> tuple[str, dict[str, str]]:
        """What a browser gets for the printed URL: the secret prefix it is sent to, and the
        Cookie header that then lets it in there."""
        resp = self.request(f"/?token={self.token}")
        assert resp.status == 303, (resp.status, resp.body)
        cookie = resp.getheader("Set-Cookie", "").split(";")[0]
        return resp.getheader("Location"), {"Cookie": cookie}

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class WsClient:
    """A raw WebSocket client of the dashboard: what it received, as text."""

    def __init__(self, served: Served, query: str = "width=100&height=30") -> None:
        self.served, self.query = served, query
        self.received: list[bytes] = []

    async def __aenter__(self) -> WsClient:
        prefix, cookie = self.served.login()
        origin = {"Origin": f"http://127.0.0.1:{self.served.port}"}
        self.session = aiohttp.ClientSession()
        self.ws = await self.session.ws_connect(f"http://127.0.0.1:{self.served.port}{prefix}ws?{self.query}",
                                                headers={**cookie, **origin})
        self.reader = asyncio.create_task(self._read())
        return self

    async def _read(self) -> None:
        async for msg in self.ws:
            if msg.type == aiohttp.WSMsgType.BINARY:
                self.received.append(msg.data)

    def text(self) -> bytes:
        return b"".join(self.received)

    async def wait_for(self, what: bytes, timeout: float = 40.0) -> None:
        deadline = time.monotonic() + timeout
        while what not in self.text():
            assert time.monotonic() < deadline, f"never received {what!r}: {self.text()[-300:]!r}"
            await asyncio.sleep(0.05)

    async def __aexit__(self, *exc) -> None:
        await self.ws.close()
        self.reader.cancel()
        await self.session.close()


class Screen:
    """The dashboard's output as the page received it over its WebSocket, as plain text."""

    def __init__(self, page) -> None:
        self.page = page
        self.received: list[bytes] = []
        page.on("websocket", lambda ws: ws.on("framereceived", self._frame))

    def _frame(self, payload) -> None:
        self.received.append(payload if isinstance(payload, bytes) else payload.encode())

    def text(self) -> str:
        from hermes_procs.core.supervisor.text import strip_ansi

        return strip_ansi(b"".join(self.received).decode("utf-8", "replace"))

    def clear(self) -> None:
        self.received.clear()

    def wait_for(self, *words: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not all(w in self.text() for w in words):
            assert time.monotonic() < deadline, f"the page never received {words}"
            self.page.wait_for_timeout(100)


@contextlib.contextmanager
def chromium():
    """Debian's headless chromium driven by Playwright (skips, saying why, when either is missing)."""
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"{CHROMIUM} missing (tools/system-deps.sh installs it when run as root)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (the test extra) is not installed")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


class Recorder:
    """Another local server on its own loopback port (another user's, say): it answers every GET
    with a small page and records the path and headers of each request it received."""

    def __init__(self) -> None:
        seen = self.seen = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                seen.append((self.path, dict(self.headers)))
                body = b"<html><body>another local server</body></html>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
