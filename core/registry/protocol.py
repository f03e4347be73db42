"""Client side of the supervisor socket protocol (docs/internals.md): requests and live streams."""

from __future__ import annotations

import json
import os
import select
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..supervisor import proctree, wire
from . import jobstate

if TYPE_CHECKING:
    import socket

STALL_CHECK = 0.1  # while waiting for a reply, look this often whether the supervisor is stopped


class SupervisorGone(Exception):
    """The job's supervisor is not there to answer (finished, or died)."""


class NewerSupervisor(Exception):
    """The job's supervisor speaks a newer protocol version than this client (wire.VERSION)."""


class SupervisorStuck(Exception):
    """The job's supervisor is alive but does not answer (stopped, or hung)."""

    def __init__(self, jobdir: Path) -> None:
        super().__init__(f"the supervisor of {jobdir.name} does not answer (stopped?)")


def connect(jobdir: Path, retry_for: float = 0.0) -> socket.socket:
    """A connected socket to the job's supervisor, retrying up to `retry_for` s while it starts.

    There is no socket before the supervisor binds it (just after the job starts) and after it
    removes it (just before it exits); retries stop as soon as the supervisor is known to be
    finishing (the exit is recorded) or gone.
    """
    import socket  # here: the CLI's queries of ended jobs never connect (issue 26: start like git)

    deadline = time.monotonic() + retry_for
    pause = 0.0005  # the socket appears ~1-2 ms after the spawn returns: look again soon, then less often
    while True:
        address, dirfd = _address(jobdir)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(address)
            return sock
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            sock.close()
            if time.monotonic() >= deadline or not _starting(jobdir):
                raise SupervisorGone(str(exc)) from exc
            time.sleep(pause)
            pause = min(pause * 2, 0.005)
        finally:
            if dirfd is not None:
                os.close(dirfd)


def _starting(jobdir: Path) -> bool:
    """True while the supervisor may still bind its socket: alive, and no exit recorded yet."""
    try:
        return jobstate.load(jobdir).running
    except jobstate.CorruptJob:
        return False


def _address(jobdir: Path) -> tuple[str, int | None]:
    path = str(jobdir / "sock")
    if len(path.encode()) < 100:
        return path, None
    fd = os.open(jobdir, os.O_PATH | os.O_DIRECTORY)
    return f"/proc/self/fd/{fd}/sock", fd


def request(jobdir: Path, message: dict[str, Any], timeout: float | None = 10.0, retry_for: float = 0.0,
            supervisor: tuple[int, int] | None = None) -> dict[str, Any]:
    """Send one request and return its reply; SupervisorGone when nobody is there to answer.

    With the supervisor's identity (pid, start ticks), a stopped supervisor raises
    SupervisorStuck at once (before anything is sent, if it is stopped already), as does one
    that has not answered within `timeout`.
    """
    if supervisor and proctree.is_stopped(*supervisor):
        raise SupervisorStuck(jobdir)
    sock = connect(jobdir, retry_for)
    try:
        sock.settimeout(timeout)
        try:
            sock.sendall(json.dumps(message).encode() + b"\n")
        except (ConnectionResetError, BrokenPipeError):
            pass  # turned away (too many clients) before the request arrived: the reply says so
        if supervisor is not None:
            _await_reply(sock, jobdir, timeout, supervisor)
        return read_reply(sock)
    except (ConnectionResetError, BrokenPipeError) as exc:
        raise SupervisorGone(str(exc)) from exc
    finally:
        sock.close()


def _await_reply(sock: socket.socket, jobdir: Path, timeout: float | None, supervisor: tuple[int, int]) -> None:
    """Wait until the reply starts to arrive; SupervisorStuck if the supervisor stops or lets
    `timeout` pass."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        left = STALL_CHECK if deadline is None else min(STALL_CHECK, deadline - time.monotonic())
        if left <= 0:
            raise SupervisorStuck(jobdir)
        if select.select([sock], [], [], left)[0]:
            return
        if proctree.is_stopped(*supervisor):
            raise SupervisorStuck(jobdir)


def read_reply(sock: socket.socket) -> dict[str, Any]:
    """One reply line; the bytes after it (a stream's first output) are in reply["_rest"]."""
    buf = b""
    while b"\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise SupervisorGone("the supervisor closed the connection")
        buf += chunk
    line, rest = buf.split(b"\n", 1)
    reply = json.loads(line)
    if not isinstance(reply, dict):
        raise ValueError("the supervisor's reply is not a JSON object")
    newer = wire.newer_than_us(reply)
    if newer:
        raise NewerSupervisor(newer)
    reply["_rest"] = rest
    return reply


class Stream:
    """A live attach: output bytes from absolute `offset` on; `send` types into the job."""

    def __init__(self, sock: socket.socket, offset: int, pty: bool, first: bytes) -> None:
        self.sock = sock
        self.offset = offset
        self.pty = pty
        self._first = first
        self.closed = False

    @classmethod
    def open(cls, jobdir: Path, input: bool = False, source: str = "human") -> Stream:
        sock = connect(jobdir, retry_for=2.0)
        sock.settimeout(10.0)
        sock.sendall(json.dumps({"op": wire.ATTACH, "input": input, "source": source}).encode() + b"\n")
        reply = read_reply(sock)
        if not reply.get("ok"):
            sock.close()
            raise SupervisorGone(reply.get("error", "attach refused"))
        sock.settimeout(None)
        return cls(sock, int(reply["offset"]), bool(reply.get("pty")), reply["_rest"])

    def fileno(self) -> int:
        return self.sock.fileno()

    def read(self, timeout: float | None = None) -> bytes | None:
        """Output bytes; None when nothing came within `timeout`; b"" at the end of the stream."""
        if self._first:
            data, self._first = self._first, b""
        else:
            if self.closed:
                return b""
            ready, _, _ = select.select([self.sock], [], [], timeout)
            if not ready:
                return None
            try:
                data = self.sock.recv(262144)
            except OSError:
                data = b""
        self.offset += len(data)
        return data

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.sock.close()

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
