"""What one client of `hermes-procs web` can cost the server: raw sockets that never finish
their request, more dashboards than the server runs, a terminal of 8000 x 8000 cells."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import time
from pathlib import Path

import pytest
from conftest import wait_until
from webserver import Served, WsClient

pytestmark = pytest.mark.timeout(90)

HEADER_TIMEOUT = 10  # tui/web_sessions.py: a request's headers must be complete within this many seconds


def dashboards(served: Served) -> list[int]:
    """Pids of the dashboard processes the server runs now."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
                status = (entry / "status").read_text()
            except OSError:
                continue
            ppid = int(re.search(r"PPid:\s+(\d+)", status).group(1))
            if b"hermes_procs.tui.web_app" in argv and _descends(ppid, served.proc.pid):
                found.append(int(entry.name))
    return found


def _descends(pid: int, ancestor: int) -> bool:
    while pid > 1:
        if pid == ancestor:
            return True
        try:
            pid = int(re.search(r"PPid:\s+(\d+)", Path(f"/proc/{pid}/status").read_text()).group(1))
        except OSError:
            return False
    return False


def closed_by_server(sock: socket.socket) -> bool:
    try:
        return sock.recv(1, socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True


def test_half_sent_requests_are_closed_after_the_header_timeout(tmp_path):
    served = Served(tmp_path / "home")
    socks: list[socket.socket] = []
    try:
        for _ in range(300):
            sock = socket.create_connection(("127.0.0.1", served.port))
            sock.sendall(f"GET /?token={served.token} HTTP/1.1\r\nHost: 127.0.0.1:{served.port}\r\n".encode())
            socks.append(sock)
        trickler = socks[0]  # sends one more header byte every second: no way around the deadline
        started = time.monotonic()
        while time.monotonic() - started < HEADER_TIMEOUT + 8:
            if all(closed_by_server(s) for s in socks):
                break
            try:
                trickler.sendall(b"X")
            except OSError:
                pass
            time.sleep(1)
        open_ = sum(not closed_by_server(s) for s in socks)
        assert open_ == 0, f"{open_} of 300 half-sent requests still open after {time.monotonic() - started:.0f} s"
        assert served.request(f"/?token={served.token}").status == 303  # and the server still answers
    finally:
        for sock in socks:
            sock.close()
        served.stop()


def test_dashboards_are_capped_with_a_clear_refusal(tmp_path):
    served = Served(tmp_path / "home", "--max-sessions", "2")

    async def scenario() -> None:
        async with WsClient(served) as one, WsClient(served) as two:
            await one.wait_for(b"hermes-procs")
            await two.wait_for(b"hermes-procs")
            async with WsClient(served) as three:
                await three.wait_for(b"--max-sessions 2")
                assert b"2 dashboards are open" in three.text()
                await asyncio.sleep(1.0)
                assert len(dashboards(served)) == 2  # the third started none
        # one closed: the next connection gets a dashboard again
        await asyncio.sleep(0.5)
        wait_until(lambda: len(dashboards(served)) == 0, timeout=20)
        async with WsClient(served) as four:
            await four.wait_for(b"hermes-procs")
            assert b"--max-sessions" not in four.text()

    try:
        asyncio.run(scenario())
    finally:
        served.stop()


def max_row(data: bytes) -> int:
    """The lowest screen row the dashboard drew on (its cursor moves, ESC [ row ; col H)."""
    return max((int(m.group(1)) for m in re.finditer(rb"\x1b\[(\d+);\d+H", data)), default=0)


def test_terminal_size_is_clamped(tmp_path):
    served = Served(tmp_path / "home")

    async def scenario() -> None:
        async def rows(predicate) -> int:
            deadline = time.monotonic() + 30
            while not predicate(max_row(huge.text())):
                assert time.monotonic() < deadline, max_row(huge.text())
                await asyncio.sleep(0.05)
            await asyncio.sleep(1.0)  # the rest of the paint
            return max_row(huge.text())

        async with WsClient(served, "width=8000&height=8000") as huge:
            assert await rows(lambda n: n >= 24) <= 200
            huge.received.clear()
            await huge.ws.send_json(["resize", {"width": 100, "height": 30}])
            assert await rows(lambda n: n >= 24) == 30  # a normal size is taken as it is
            huge.received.clear()
            await huge.ws.send_json(["resize", {"width": 8000, "height": 8000}])
            assert 30 < await rows(lambda n: n > 30) <= 200
            for junk in ({"width": "x", "height": None}, {"width": -5, "height": 1e308}, {}):
                await huge.ws.send_json(["resize", junk])
            for junk in ("not json", "[]", "{}", '["stdin"]', '["stdin", 5]', '["resize", 3]', '["nope", 1]'):
                await huge.ws.send_str(junk)
            await asyncio.sleep(1.5)  # the junk's own paints (80x24, 20x200) come and go
            huge.received.clear()
            await huge.ws.send_json(["resize", {"width": 100, "height": 31}])
            assert await rows(lambda n: n >= 24) == 31  # the junk broke nothing
            assert len(dashboards(served)) == 1

    try:
        asyncio.run(scenario())
    finally:
        served.stop()


def gone(pids: list[int]) -> bool:
    return not any(Path(f"/proc/{pid}").exists() and "zombie" not in Path(f"/proc/{pid}/status").read_text()
                   for pid in pids)


def test_no_dashboard_outlives_its_server(tmp_path):
    """A server killed while a browser is connected takes its dashboard process with it (one
    used to stay, 50 MB, reading a closed pipe for ever)."""
    served = Served(tmp_path / "home")

    async def connected() -> list[int]:
        async with WsClient(served) as client:
            await client.wait_for(b"hermes-procs")
            pids = dashboards(served)
            assert len(pids) == 1
            served.proc.kill()
            served.proc.wait(timeout=30)
            return pids

    try:
        pids = asyncio.run(connected())
        wait_until(lambda: gone(pids), timeout=15)
    finally:
        served.stop()


def test_a_frozen_dashboard_does_not_keep_its_place(tmp_path):
    """A dashboard that does not quit when its tab closes (stopped here; a frozen one alike) is
    killed after a grace period, and its place under --max-sessions is free again."""
    served = Served(tmp_path / "home", "--max-sessions", "1")

    async def scenario() -> None:
        async with WsClient(served) as first:
            await first.wait_for(b"hermes-procs")
            (pid,) = dashboards(served)
            os.kill(pid, signal.SIGSTOP)
        wait_until(lambda: gone([pid]), timeout=20)
        async with WsClient(served) as second:
            await second.wait_for(b"hermes-procs")
            assert b"--max-sessions" not in second.text()

    try:
        asyncio.run(scenario())
    finally:
        served.stop()
