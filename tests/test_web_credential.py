"""The browser credential of `hermes-procs web` reaches no other server on 127.0.0.1.

Browsers send a cookie of 127.0.0.1 to every port of it (SameSite does not separate ports), so
a victim who opened the dashboard and then any page of another local user's server used to hand
that user the token.  Real Chromium opens the dashboard, then pages of a second loopback server
that records what it receives; what it got (and even the browser's own cookie) must not let a
raw HTTP or WebSocket client in.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys

import aiohttp
import pytest
from webserver import Recorder, Screen, Served, WsClient, chromium

pytestmark = pytest.mark.timeout(120)

# paths an attacker's server could be visited at: its root, and the dashboard's own paths
OTHER_PATHS = ("/", "/ws", "/static/css/xterm.css", "/download/x", "/?token=x")


def ws_refused(port: int, path: str, cookies: dict[str, str]) -> int:
    """The HTTP status a raw WebSocket client gets for `path` with `cookies` (101: it got in)."""
    async def attempt() -> int:
        jar = aiohttp.CookieJar(unsafe=True)
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())} if cookies else {}
        async with aiohttp.ClientSession(cookie_jar=jar) as session:
            try:
                async with session.ws_connect(f"http://127.0.0.1:{port}{path}", headers=headers):
                    return 101
            except aiohttp.WSServerHandshakeError as exc:
                return exc.status
    return asyncio.run(attempt())


def test_no_other_loopback_port_receives_the_credential(tmp_path):
    home = tmp_path / "home"
    keeper = subprocess.run([sys.executable, "-m", "hermes_procs", "--home", str(home), "run", "--name", "keeper",
                             "--", "sleep", "120"], check=True, capture_output=True, text=True, timeout=30)
    keeper_id = keeper.stdout.strip()
    served = Served(home)
    other = Recorder()
    try:
        with chromium() as browser:
            context = browser.new_context()  # one browser profile: its cookies are shared by its tabs
            page = context.new_page()
            shown = Screen(page)
            page.goto(served.url)
            page.wait_for_selector("body.-first-byte .textual-terminal.-connected", timeout=60_000)
            shown.wait_for("keeper")
            dashboard = page.url
            assert served.token not in dashboard  # the address bar never shows the token
            # later, the same browser visits pages of the other server, in a new tab and in this one
            tab = context.new_page()
            for path in OTHER_PATHS:
                tab.goto(f"http://127.0.0.1:{other.port}{path}")
            page.goto(f"http://127.0.0.1:{other.port}/")
            cookies = {c["name"]: c["value"] for c in context.cookies()}
    finally:
        other.stop()
    try:
        assert set(OTHER_PATHS) <= {path for path, _ in other.seen}  # (and the browser's /favicon.ico)
        for path, headers in other.seen:
            received = " ".join(f"{k}: {v}" for k, v in headers.items())
            assert "Cookie" not in headers and "cookie" not in headers, (path, headers)
            assert served.token not in received, (path, received)
            assert dashboard.split("/")[3] not in received, (path, received)  # nor the secret path
        # what the browser holds is no use without the secret path it is scoped to ...
        assert cookies, "the browser holds the dashboard's cookie"
        for path in ("/ws", "/", "/static/css/xterm.css"):
            assert ws_refused(served.port, path, cookies) == 403, path
            assert served.request(path, {"Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())}).status == 403
        # ... nor is the secret path (seen in the address bar) without the cookie
        prefix = "/" + dashboard.split("/")[3] + "/"
        assert served.request(prefix).status == 403
        assert ws_refused(served.port, prefix + "ws", {}) == 403
        # with both, the dashboard answers (the checks above refuse for the right reason)
        assert ws_refused(served.port, prefix + "ws", cookies) == 101
    finally:
        served.stop()
        subprocess.run([sys.executable, "-m", "hermes_procs", "--home", str(home), "kill", "--grace", "0.2",
                        keeper_id], capture_output=True, timeout=30)


def test_no_screenshot_command_in_the_browser(tmp_path):
    """Textual's palette command "Screenshot" hands the browser a download at /download/<key>,
    outside the secret path (refused): the browser's dashboard does not offer it."""
    served = Served(tmp_path / "home")

    async def palette() -> None:
        async with WsClient(served) as client:
            await client.wait_for(b"hermes-procs")
            await client.ws.send_json(["stdin", "\x10"])  # Ctrl-P
            await client.wait_for(b"Search for commands")
            await client.ws.send_json(["stdin", "theme"])
            await client.wait_for(b"Change the current theme")  # the palette answers ...
            client.received.clear()
            await client.ws.send_json(["stdin", "\x7f" * 5 + "screensh"])
            await asyncio.sleep(1.5)
            assert b"SVG" not in client.text()  # ... but has no screenshot

    try:
        asyncio.run(palette())
    finally:
        served.stop()
