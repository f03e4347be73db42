"""The WebSocket end of `hermes-procs web`: one dashboard process per connection, within bounds.

What one browser (or a raw client with the credential) may cost the server:

* at most ``max_sessions`` dashboard processes at once (each is a whole dashboard, ~50 MB): a
  connection past the cap starts none and is told why, in its terminal;
* a terminal of at most :data:`MAX_COLS` x :data:`MAX_ROWS` cells, at the start and at every
  resize (8000 x 8000 asked for half a gigabyte and 18 MB/s of output); a size that is no
  number is 80 x 24, and any other malformed message is ignored (it used to end the session);
* a request whose headers are not complete within :data:`HEADER_TIMEOUT` seconds is closed
  (given to aiohttp as its keep-alive timeout, which also closes a connection that never sends a
  whole request, even one byte at a time);
* a dashboard that has not quit :data:`QUIT_GRACE` seconds after its connection ended (frozen,
  stopped) is killed, so it keeps no place under the cap; one whose server ended dies with it
  (web_app.py).
"""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import WSMsgType, web
from textual_serve.app_service import AppService

HEADER_TIMEOUT = 10.0
MAX_SESSIONS = 4
QUIT_GRACE = 3.0  # seconds a dashboard gets to quit when its connection ends, then it is killed
MAX_COLS, MAX_ROWS = 500, 200
MIN_COLS, MIN_ROWS = 20, 5
MAX_MESSAGE = 1 << 20  # bytes of one WebSocket message from the browser (keys, a paste, a resize)


def _bounded(value: Any, default: int, low: int, high: int) -> int:
    try:
        number = int(value)  # a string from the query, a JSON number from a resize message
    except (TypeError, ValueError, OverflowError):
        number = default
    return min(max(number, low), high)


def clamp_size(width: Any, height: Any) -> tuple[int, int]:
    """A terminal size the server is willing to draw: within the bounds, 80 x 24 for junk."""
    return _bounded(width, 80, MIN_COLS, MAX_COLS), _bounded(height, 24, MIN_ROWS, MAX_ROWS)


class SizedAppService(AppService):
    """textual-serve's process manager with every terminal size clamped."""

    async def start(self, width: Any, height: Any) -> None:
        await super().start(*clamp_size(width, height))

    async def set_terminal_size(self, width: Any, height: Any) -> None:
        await super().set_terminal_size(*clamp_size(width, height))


def refusal(max_sessions: int) -> bytes:
    """What a connection past the cap sees in its terminal."""
    return (f"\r\n  hermes-procs web: {max_sessions} dashboard{'s' * (max_sessions != 1)} are open already, "
            f"the most this server runs (--max-sessions {max_sessions}).\r\n"
            "  Close one of them (a browser tab), then reload this page.\r\n").encode()


class Sessions:
    """The dashboards one server runs: started per WebSocket, counted, capped."""

    def __init__(self, server: Any, max_sessions: int = MAX_SESSIONS) -> None:
        self.server = server  # the textual-serve Server: its command and downloads
        self.max_sessions = max_sessions
        self.running = 0

    async def handle(self, request: web.Request) -> web.WebSocketResponse:
        """The ``ws`` route: a dashboard for this connection, or the refusal when at the cap."""
        websocket = web.WebSocketResponse(heartbeat=15, max_msg_size=MAX_MESSAGE)
        await websocket.prepare(request)
        if self.running >= self.max_sessions:
            await websocket.send_bytes(refusal(self.max_sessions))
            async for _ in websocket:  # keep the message on screen until the tab goes
                pass
            return websocket
        self.running += 1
        try:
            await self._run(request, websocket)
        finally:
            self.running -= 1
        return websocket

    async def _run(self, request: web.Request, websocket: web.WebSocketResponse) -> None:
        async def close() -> None:
            await websocket.close()

        service = SizedAppService(self.server.command, write_bytes=websocket.send_bytes,
                                  write_str=websocket.send_str, close=close,
                                  download_manager=self.server.download_manager)
        try:
            await service.start(*clamp_size(request.query.get("width"), request.query.get("height")))
            await _relay(websocket, service)
        except asyncio.CancelledError:  # the server shuts down
            await websocket.close()
        finally:
            await _stop(service)


async def _stop(service: SizedAppService) -> None:
    """Ask the dashboard to quit; kill it if it has not within QUIT_GRACE seconds."""
    try:
        await asyncio.wait_for(service.stop(), QUIT_GRACE)
    except (TimeoutError, asyncio.CancelledError):
        pass
    finally:
        process = service._process  # textual-serve's: the dashboard itself (the command execs)
        if process is not None and process.returncode is None:
            process.kill()


async def _relay(websocket: web.WebSocketResponse, service: SizedAppService) -> None:
    """The browser's messages to its dashboard (textual-serve's protocol: ``["stdin", text]``,
    ``["resize", {"width", "height"}]``, ``["ping", x]``, ``["blur"]``, ``["focus"]``)."""
    async for message in websocket:
        if message.type != WSMsgType.TEXT:
            continue
        try:
            envelope = message.json()
        except ValueError:
            continue
        if not isinstance(envelope, list) or not envelope:
            continue
        kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
        if kind == "stdin" and isinstance(data, str):
            await service.send_bytes(data.encode("utf-8", "replace"))
        elif kind == "resize" and isinstance(data, dict):
            await service.set_terminal_size(data.get("width"), data.get("height"))
        elif kind == "ping":
            await websocket.send_json(["pong", data])
        elif kind == "blur":
            await service.blur()
        elif kind == "focus":
            await service.focus()
