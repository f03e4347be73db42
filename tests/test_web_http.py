"""`hermes-procs web` at the HTTP level: a real server process on a free port, raw requests
with chosen Host / Origin / token / cookie headers (http.client lets a test lie like an
attacker's page would)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest
from conftest import wait_until
from webserver import Served

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    s = Served(tmp_path_factory.mktemp("webhome"))
    yield s
    s.stop()
    assert s.proc.returncode == 0


def one_line_403(resp, why: str) -> None:
    assert resp.status == 403, (resp.status, resp.body)
    assert resp.getheader("Content-Type", "").startswith("text/plain")
    assert resp.body.count("\n") == 1 and why in resp.body, resp.body


WS_HEADERS = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
              "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}


def test_printed_url_is_loopback_with_a_token(served):
    text = "".join(served.printed)
    assert f"http://127.0.0.1:{served.port}/?token={served.token}" in text
    assert len(served.token) >= 32


def test_no_token_is_refused(served):
    prefix, _ = served.login()
    one_line_403(served.request("/"), "no token")
    one_line_403(served.request(prefix), "no token")
    one_line_403(served.request(prefix + "static/css/xterm.css"), "no token")
    one_line_403(served.request(prefix + "ws", WS_HEADERS), "no token")


def test_wrong_token_is_refused(served):
    prefix, _ = served.login()
    one_line_403(served.request("/?token=nope"), "wrong token")
    one_line_403(served.request(prefix, {"Cookie": f"hermes_procs_token_{served.port}=nope"}), "wrong token")
    one_line_403(served.request(prefix + "ws?token=nope", WS_HEADERS), "wrong token")


def test_pages_outside_the_secret_prefix_are_refused_even_with_the_token(served):
    prefix, cookie = served.login()
    for path in ("/ws", "/static/css/xterm.css", "/download/x", "/index.html", prefix[:-1], "/x" + prefix):
        one_line_403(served.request(path, cookie), "not a page of this server")
        one_line_403(served.request(f"{path}?token={served.token}", cookie), "not a page of this server")
    one_line_403(served.request("/", cookie), "no token")  # the cookie is no login at /


def test_token_logs_in_with_a_cookie_scoped_to_the_secret_prefix(served):
    resp = served.request(f"/?token={served.token}")
    assert resp.status == 303
    prefix = resp.getheader("Location")
    assert prefix.startswith("/") and prefix.endswith("/") and len(prefix) >= 24 and served.token not in prefix
    cookie = resp.getheader("Set-Cookie", "")
    assert f"hermes_procs_token_{served.port}={served.token}" in cookie
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and f"Path={prefix}" in cookie
    assert resp.getheader("Referrer-Policy") == "no-referrer"
    page = served.request(prefix, {"Cookie": f"hermes_procs_token_{served.port}={served.token}"})
    assert page.status == 200 and "<html" in page.body.lower()
    assert page.getheader("Referrer-Policy") == "no-referrer" and page.getheader("Cache-Control") == "no-store"
    # the page's WebSocket and files are under the prefix, on this server
    assert f"127.0.0.1:{served.port}{prefix}ws" in page.body
    assert f"{prefix}static/css/xterm.css" in page.body
    assert served.request(prefix + "static/css/xterm.css",
                          {"Cookie": f"hermes_procs_token_{served.port}={served.token}"}).status == 200
    assert served.request(prefix, {"Cookie": f"hermes_procs_token_{served.port}={served.token}",
                                   "Host": f"localhost:{served.port}"}).status == 200


def test_a_planted_cookie_of_the_same_name_does_not_push_ours_out(served):
    """Another local server can set a cookie of our name for Path=/ (the browser then sends both,
    ours first): the real one still lets the browser in."""
    prefix, _ = served.login()
    both = f"hermes_procs_token_{served.port}={served.token}; hermes_procs_token_{served.port}=planted"
    assert served.request(prefix, {"Cookie": both}).status == 200


def test_foreign_host_is_refused_even_with_the_token(served):
    prefix, cookie = served.login()
    ok = f"/?token={served.token}"
    one_line_403(served.request(ok, {"Host": f"evil.example:{served.port}"}), "Host header")
    one_line_403(served.request(ok, {"Host": "127.0.0.1:1"}), "Host header")
    one_line_403(served.request(ok, {"Host": ""}), "Host header")
    one_line_403(served.request(prefix + "ws", {**WS_HEADERS, **cookie, "Host": f"evil.example:{served.port}"}),
                 "Host header")


def test_foreign_origin_is_refused_also_on_the_websocket(served):
    prefix, cookie = served.login()
    evil = {"Origin": "http://evil.example"}
    one_line_403(served.request(f"/?token={served.token}", evil), "Origin")
    one_line_403(served.request(prefix + "ws", {**WS_HEADERS, **cookie, **evil}), "Origin")
    one_line_403(served.request(prefix + "ws", {**WS_HEADERS, **cookie,
                                                "Origin": f"http://127.0.0.1:{served.port + 1}"}), "Origin")
    assert served.request(prefix, {**cookie, "Origin": f"http://localhost:{served.port}"}).status == 200


def test_malformed_headers_are_refused_in_one_line_and_print_no_traceback(served):
    # anyone on the machine can send these, no token needed: they made a 500 and a 22-line
    # traceback in the user's terminal
    prefix, _ = served.login()
    one_line_403(served.request(f"/?token={served.token}", {"Origin": "http://[::1"}), "Origin")
    one_line_403(served.request(prefix, {"Cookie": f"hermes_procs_token_{served.port}=\xff"}), "")
    with socket.create_connection(("127.0.0.1", served.port), timeout=20) as sock:  # aiohttp's own 400
        sock.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n")
        assert b" 400 " in sock.recv(100)
    time.sleep(0.5)  # what the server printed about them has arrived
    printed = "".join(served.printed)
    after = printed.split("Press Ctrl+C to stop.\n", 1)[1].splitlines()
    assert after and all(line.startswith("hermes-procs: web: ") for line in after), printed  # one line each
    assert served.request(prefix, {"Cookie": f"hermes_procs_token_{served.port}={served.token}"}).status == 200


@pytest.mark.parametrize("flag", ["--host", "--bind"])
def test_non_loopback_bind_needs_allow_remote(tmp_path, flag):
    r = subprocess.run([sys.executable, "-m", "hermes_procs", "--home", str(tmp_path), "web", flag, "0.0.0.0",
                        "--port", "0"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and "--allow-remote" in r.stderr, r.stderr
    # the tunnel it suggests is one that can be typed (--port 0 has no port to forward yet)
    assert "ssh -L 8765:127.0.0.1:8765 HOST" in r.stderr and "ssh -L 0:" not in r.stderr, r.stderr


def test_allow_remote_says_how_to_tunnel(tmp_path):
    s = Served(tmp_path, "--bind", "0.0.0.0", "--allow-remote")
    try:
        wait_until(lambda: any("ssh -L" in line for line in s.printed), timeout=10)
        # a wildcard bind accepts IP literals with the port, never names (DNS rebinding)
        ok = f"/?token={s.token}"
        assert s.request(ok, {"Host": f"10.1.2.3:{s.port}"}).status == 303
        one_line_403(s.request(ok, {"Host": f"rebind.example:{s.port}"}), "Host header")
    finally:
        s.stop()


def test_busy_port_is_one_line(served, tmp_path):
    r = subprocess.run([sys.executable, "-m", "hermes_procs", "--home", str(tmp_path), "web", "--port",
                        str(served.port)], capture_output=True, text=True, timeout=30,
                       env={**os.environ})
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "cannot serve" in r.stderr, r.stderr


def test_read_only_server_ignores_a_kill_typed_by_a_modified_client(tmp_path):
    """A client is free to send any keystroke over the WebSocket: the dashboard process on the
    server decides, and in --read-only it refuses (kill confirmed with y, a new job, input, the
    log saved to a file)."""
    import asyncio
    import time

    import aiohttp

    from hermes_procs.core import ProcessRegistry
    from hermes_procs.core.supervisor.text import strip_ansi

    home = tmp_path / "home"
    reg = ProcessRegistry(home=home)
    sid = reg.spawn("read line; echo got $line; sleep 300", name="keeper")["session_id"]
    served = Served(home, "--read-only")
    planted = tmp_path / "authorized_keys"

    async def attack() -> str:
        prefix, _ = served.login()
        url = f"http://127.0.0.1:{served.port}{prefix}ws?width=100&height=30&token={served.token}"
        received: list[bytes] = []
        origin = {"Origin": f"http://127.0.0.1:{served.port}"}
        async with aiohttp.ClientSession() as session, session.ws_connect(url, headers=origin) as ws:
            async def read() -> None:
                async for msg in ws:
                    if msg.type == aiohttp.WSMsgType.BINARY:
                        received.append(msg.data)
            reader = asyncio.create_task(read())
            await ws.send_json(["resize", {"width": 100, "height": 30}])
            deadline = time.monotonic() + 30
            while "keeper" not in strip_ansi(b"".join(received).decode("utf-8", "replace")):
                assert time.monotonic() < deadline, "the dashboard never showed the job"
                await asyncio.sleep(0.05)
            for key in ["k", "y", "s", "\r", "i", "x", "\r", "n", "true", "\r", "t", "x",
                        "\x1b", "l", "\x13", "\x15", str(planted), "\r"]:  # save the log (Ctrl-S) to a path
                await ws.send_json(["stdin", key])
                await asyncio.sleep(0.2)
            await asyncio.sleep(1.0)
            reader.cancel()
        return strip_ansi(b"".join(received).decode("utf-8", "replace"))

    try:
        shown = asyncio.run(attack())
        assert "read-only" in shown  # the dashboard said why
        assert reg.poll(sid)["status"] == "running"
        assert [j["session_id"] for j in reg.list()] == [sid]  # no new job
        assert "got" not in reg.read_log(sid)["output"]  # no input reached it
        assert not planted.exists()  # no file written on the server
    finally:
        served.stop()
        reg.kill(sid, grace=0.2)
