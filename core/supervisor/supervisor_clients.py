"""The supervisor's client hub: the Unix socket, its connections (at most MAX_CLIENTS, fewer
under a low fd limit), request lines in, replies and attached streams out, back-off when out
of descriptors. Requests are handed to Supervisor._dispatch.

A mixin of supervisor_loop.Supervisor (it uses the supervisor's state); stdlib only.
"""

from __future__ import annotations

import errno
import json
import os
import selectors
import socket
import time

import wire
from supervisor_state import SupervisorState

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn

MAX_CLIENT_BACKLOG = 4 << 20
MAX_CLIENTS = 256  # connections served at once (fewer when the fd limit is low); the rest get an error
RESERVED_FDS = 24  # descriptors kept free for the log, state files and the job's pipes
ACCEPT_BACKOFF = (0.05, 1.0)  # pause accepting this long (doubling) while out of descriptors
MAX_REQUEST = 8 << 20  # a request line longer than this closes the connection


class Client:
    """One socket connection: a request/reply peer, or (after attach) a raw stream."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.inbuf = b""
        self.outbuf = bytearray()
        self.attached = False
        self.input = False
        self.source = "human"
        self.typed = bytearray()


class ClientHub(SupervisorState):
    def _init_clients(self) -> None:
        self.clients = {}
        self.accept_paused_until = None
        self.accept_delay = ACCEPT_BACKOFF[0]
        self.max_clients = max(1, min(MAX_CLIENTS, _open_max() - RESERVED_FDS))
        self.spare_fd = _spare_fd()

    def _accept(self) -> None:
        try:
            sock, _ = self.listener.accept()
        except (BlockingIOError, InterruptedError, ConnectionAbortedError):
            return
        except OSError as exc:
            if exc.errno not in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                raise
            return self._out_of_descriptors()
        if len(self.clients) >= self.max_clients:
            return self._turn_away(sock, f"too many clients: this supervisor serves {self.max_clients} "
                                         "connections at once; try again")
        self.accept_delay = ACCEPT_BACKOFF[0]
        sock.setblocking(False)
        client = Client(sock)
        self.clients[sock.fileno()] = client
        self.sel.register(sock, selectors.EVENT_READ, client)

    def _out_of_descriptors(self) -> None:
        """accept() found no free descriptor: answer the waiting client with an error through
        the spare one, then stop accepting for a moment (the listener would wake us at once)."""
        if self.spare_fd >= 0:
            os.close(self.spare_fd)
            self.spare_fd = -1
            try:
                sock, _ = self.listener.accept()
                self._turn_away(sock, "the supervisor is out of file descriptors; try again")
            except OSError:
                pass
            self.spare_fd = _spare_fd()
        self._complain("out of file descriptors: not accepting connections for a moment")
        self.sel.unregister(self.listener)
        self.accept_paused_until = time.monotonic() + self.accept_delay
        self.accept_delay = min(self.accept_delay * 2, ACCEPT_BACKOFF[1])

    def _turn_away(self, sock: socket.socket, error: str) -> None:
        try:
            sock.setblocking(False)
            sock.send(json.dumps({"ok": False, "error": error, "busy": True, "v": wire.VERSION}).encode()
                      + b"\n")
        except OSError:
            pass
        sock.close()

    def _on_client(self, client: Client, mask: int) -> None:
        if mask & selectors.EVENT_WRITE:
            self._flush_client(client)
        if mask & selectors.EVENT_READ and client.sock.fileno() in self.clients:
            try:
                data = client.sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data = b""
            if not data:
                self._drop(client)
                return
            if client.attached:
                self._attached_input(client, data)
                return
            client.inbuf += data
            self._handle_lines(client)

    def _handle_lines(self, client: Client) -> None:
        while b"\n" in client.inbuf and not client.attached and client.sock.fileno() in self.clients:
            line, client.inbuf = client.inbuf.split(b"\n", 1)
            try:
                request = json.loads(line, parse_constant=_no_constant)
                if not isinstance(request, dict) or not isinstance(request.get("op"), str):
                    raise ValueError('a request is a JSON object with an "op" string')
                self._dispatch(client, request)
            except KeyError as exc:
                self._reply(client, {"ok": False, "error": f"bad request: missing {exc}"})
            except Exception as exc:  # noqa: BLE001 - any bad request gets an answer, the next ones too
                self._reply(client, {"ok": False, "error": f"bad request: {_short(exc)}"})
        if len(client.inbuf) > MAX_REQUEST:
            self._drop(client)
        elif client.attached and client.inbuf:
            rest, client.inbuf = client.inbuf, b""
            self._attached_input(client, rest)

    def _reply(self, client: Client, message: dict[str, Any]) -> None:
        message["v"] = wire.VERSION
        self._send(client, (json.dumps(message) + "\n").encode())

    def _send(self, client: Client, data: bytes | memoryview) -> None:
        if client.sock.fileno() not in self.clients:
            return
        if len(client.outbuf) > MAX_CLIENT_BACKLOG:
            return self._drop(client)
        was_empty = not client.outbuf
        client.outbuf += data
        if was_empty:
            self._flush_client(client)

    def _flush_client(self, client: Client) -> None:
        try:
            while client.outbuf:
                done = client.sock.send(client.outbuf[:262144])
                del client.outbuf[:done]
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            return self._drop(client)
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if client.outbuf else 0)
        self.sel.modify(client.sock, events, client)

    def _drop(self, client: Client) -> None:
        fd = client.sock.fileno()
        if self.clients.pop(fd, None) is not None:
            self.sel.unregister(client.sock)
        client.sock.close()
        if client in self.waiters:
            self.waiters.remove(client)

    def _flush_blocking(self, client: Client) -> None:
        try:
            client.sock.setblocking(True)
            client.sock.settimeout(1.0)
            client.sock.sendall(client.outbuf)
        except OSError:
            pass


def _open_max() -> int:
    try:
        return os.sysconf("SC_OPEN_MAX")  # the soft RLIMIT_NOFILE
    except (OSError, ValueError):
        return 1024


def _spare_fd() -> int:
    """A descriptor held in reserve, released to answer a client when all others are in use."""
    try:
        return os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return -1


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a number")


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 200 else text[:197] + "..."
