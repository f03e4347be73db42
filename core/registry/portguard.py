"""The port guard of `spawn(port=N)`: who holds TCP port N, named in one line.

A port is held by a running job of the home whose processes listen on it (the `ports` of its
list row), by a running job started with `port=N` that does not listen yet (two dev servers
started at once), or by any other process listening on it (/proc/net/tcp{,6}, this network
namespace): then its pid and command, found through the socket's inode among the fds of every
process this user can see. Stdlib only, Python 3.9 syntax: it runs on remote hosts.
"""

from __future__ import annotations

import os
from typing import Any

from ..supervisor import stats
from ..supervisor.bounds import whole
from ..supervisor.text import safe_line
from .processes import command_line

MAX_SHOWN = 80  # characters of a name or command line in the message


def checked_port(port: object) -> int:
    """A TCP port number, 1-65535 (BadNumber otherwise)."""
    return whole(port, "port", 1, 65535)


def holder(rows: list[dict[str, Any]], port: int) -> str | None:
    """Who holds `port`, as words for an error line ("job proc_x (web)", "pid 42 (python3 -m
    http.server)"); None when it is free. `rows`: the home's list()."""
    running = [row for row in rows if row.get("status") == "running"]
    for row in running:
        if port in (row.get("ports") or ()):
            return _job(row)
    for row in running:
        if row.get("port") == port:
            return f"{_job(row)}, started with port={port} and not listening yet"
    inodes = {inode for inode, number in stats.listening_sockets().items() if number == port}
    if not inodes:
        return None
    pid = _owner_of(inodes)
    if pid is None:
        return "a process of another user"
    return f"pid {pid} ({_short(command_line(pid))}), which is not a hermes-procs job of this home"


def _job(row: dict[str, Any]) -> str:
    """`job proc_... (web)`, a stack's `job proc_... (st1/web)`: several stacks may have a web."""
    name = str(row.get("name") or "")
    name = _short(f"{row['stack']}/{name}" if name and row.get("stack") else name)
    return f"job {row.get('session_id')}" + (f" ({name})" if name else "")


def _short(text: str) -> str:
    text = safe_line(text)
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN - 3] + "..."


def _owner_of(inodes: set[str]) -> int | None:
    """A process holding one of the socket `inodes` (the lowest pid), or None when no process we
    can see does."""
    for name in sorted((n for n in os.listdir("/proc") if n.isdigit()), key=int):
        if stats.socket_inodes([int(name)]) & inodes:
            return int(name)
    return None
