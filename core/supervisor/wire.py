"""The supervisor socket protocol's shared vocabulary: version, op names, reply keys.

Both ends import this file: the supervisor as `wire` (it runs `python -I -S` with core/ on its
path; stdlib only, no package-relative imports) and the client as `hermes_procs.core.supervisor.wire`
(core/registry/protocol.py). docs/internals.md describes the protocol.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # a type checker takes it as true; the supervisor does not load typing
if TYPE_CHECKING:
    import socket

VERSION = 1  # every reply carries it as "v"; a client meeting a newer one says so

# ops (the "op" of a request)
STATUS = "status"
WRITE = "write"
CLOSE_STDIN = "close_stdin"
RESIZE = "resize"
SIGNAL = "signal"
KILL = "kill"
WAIT = "wait"
ATTACH = "attach"
WATCH = "watch"  # replace a running job's watch patterns (ProcessRegistry.set_watch_patterns)
PIN = "pin"  # keep a leased job when its owner ends, or not ({"pinned": bool}; ProcessRegistry.pin)
OPS = (STATUS, WRITE, CLOSE_STDIN, RESIZE, SIGNAL, KILL, WAIT, ATTACH, WATCH, PIN)

# reply keys beyond "ok", "error" and "v", per op
REPLY_KEYS = {
    STATUS: ("pid", "running", "offset", "stdin_open", "exit", "exit_stored", "output_dropped"),
    WRITE: ("bytes_written",),
    CLOSE_STDIN: (),
    RESIZE: (),
    SIGNAL: (),
    KILL: ("survivors", "exit"),
    WAIT: ("exit",),
    ATTACH: ("offset", "pty"),
    WATCH: ("patterns",),
    PIN: ("pinned",),
}
ERROR_KEYS = ("error", "exited", "busy")  # "exited": the job has ended; "busy": too many clients


def newer_than_us(reply: dict[str, object]) -> str | None:
    """A clear message when the reply comes from a supervisor speaking a newer protocol."""
    version = reply.get("v", VERSION)
    if isinstance(version, int) and not isinstance(version, bool) and version > VERSION:
        return (f"this job's supervisor speaks protocol version {version}, this hermes-procs only "
                f"version {VERSION}: upgrade hermes-procs to talk to it")
    return None


def listen(name: str, backlog: int) -> socket.socket:
    """A listening Unix socket at `name` (0600, in the working directory), put in place only once
    it listens, over any old one: a client that finds the name can always connect (between bind
    and listen it would be refused, and take the server for gone). Used by the supervisor (the
    job's `sock`) and the template (`template.sock`)."""
    import socket  # here: a client importing the vocabulary need not load it

    tmp = f".{name}.{os.getpid()}.tmp"
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    old = os.umask(0o177)
    try:
        sock.bind(tmp)
    finally:
        os.umask(old)
    sock.listen(backlog)
    os.rename(tmp, name)
    return sock
