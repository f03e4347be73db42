"""A job's processes as rows (the dashboard's process tree, `registry.tree`), and signalling one
of them (`registry.signal_process`). Stdlib only, Python 3.9 syntax: it runs on remote hosts.

Which processes belong to a job is proctree's rule (pid + start ticks, see core/supervisor/proctree.py):
the caller passes the job's identity-checked members, and a process is signalled only if it is
one of them with the same start ticks, through :func:`proctree.send` (a pidfd opened before the
identity check, so a pid recycled meanwhile is never hit).

Each row: ``pid``, ``ppid``, ``start_ticks``, ``depth`` (0 for the job's top processes),
``command``, ``state`` (the /proc letter: R S D T t Z I ...), ``cpu_percent`` (of one core,
since the previous call for that process; its average since it started on the first),
``rss_bytes``, ``awaiting_input`` (blocked reading the job's stdin or terminal), ``ports`` (the
TCP ports it listens on). Rows come in
tree order: each process right after its parent, siblings by pid.
"""

from __future__ import annotations

import os
from _thread import allocate_lock  # threading's Lock; `threading` costs a CLI query ~1.5 ms
from typing import Any

from ..supervisor import proctree, stats

MAX_COMMAND = 300  # characters of a command line kept in a row
Row = dict[str, Any]  # one process: the keys listed above


def boot_time() -> float:
    """Epoch seconds when the machine booted (``btime`` in /proc/stat)."""
    try:
        with open("/proc/stat", "rb") as fh:
            for line in fh:
                if line.startswith(b"btime "):
                    return float(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0.0


def command_line(pid: int) -> str:
    """The process's arguments joined by spaces; ``[name]`` when it has none (a kernel thread, a
    zombie); "" when it is gone."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            raw = fh.read(MAX_COMMAND * 4)
    except OSError:
        raw = b""
    text = raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")
    if text:
        return text[:MAX_COMMAND]
    try:
        with open(f"/proc/{pid}/comm", "rb") as fh:
            return "[" + fh.read().decode("utf-8", "replace").strip() + "]"
    except OSError:
        return ""


class ProcessRows:
    """Rows of a job's processes; keeps each process's previous CPU figure between calls."""

    def __init__(self) -> None:
        self._cpu = stats.CpuMeter()
        self._keys: set[str] = set()  # the CpuMeter keys ("pid:ticks") used so far
        self._boot = boot_time()
        self._lock = allocate_lock()  # one registry serves several threads (the dashboard's workers)

    def rows(self, members: dict[int, int], stdin_target: str | None) -> list[Row]:
        """Rows for `members` (pid -> start ticks) in tree order; a process gone or recycled
        since the scan is left out. `stdin_target`: what the job's stdin is (stats.fd_target of
        its root's fd 0), for `awaiting_input`."""
        found: dict[int, Row] = {}
        listeners = stats.Listeners()
        with self._lock:
            for pid, ticks in members.items():
                row = self._row(pid, ticks, stdin_target, listeners)
                if row is not None:
                    found[pid] = row
            self._forget()
        return _tree_order(found)

    def _row(self, pid: int, ticks: int, stdin_target: str | None, listeners: stats.Listeners) -> Row | None:
        fields = proctree.stat_fields(pid)
        if not fields or int(fields[19]) != ticks:
            return None
        used = int(fields[11]) + int(fields[12])  # utime + stime: this process's own CPU
        started = self._boot + ticks / stats.CLOCK_TICKS
        self._keys.add(f"{pid}:{ticks}")
        return {"pid": pid, "ppid": int(fields[1]), "start_ticks": ticks, "depth": 0,
                "command": command_line(pid), "state": fields[0],
                "cpu_percent": self._cpu.percent(f"{pid}:{ticks}", used, started),
                "rss_bytes": int(fields[21]) * stats.PAGE_SIZE,
                "awaiting_input": stats.waiting_for_input([pid], stdin_target), "ports": listeners.ports([pid])}

    def _forget(self) -> None:
        """Drop the CPU figures of processes that are gone (of every job this was asked about)."""
        self._keys = {key for key in self._keys
                      if proctree.start_ticks(int(key.split(":")[0])) == int(key.split(":")[1])}
        self._cpu.forget(self._keys)


def _tree_order(rows: dict[int, Row]) -> list[Row]:
    """Each row right after its parent (depth set), siblings by pid; the top rows are those whose
    parent is not a member (the supervisor, or a parent outside the job)."""
    kids: dict[int, list[int]] = {}
    for pid, row in rows.items():
        kids.setdefault(row["ppid"] if row["ppid"] in rows else 0, []).append(pid)
    out: list[Row] = []
    stack = [(pid, 0) for pid in sorted(kids.get(0, []), reverse=True)]
    while stack:
        pid, depth = stack.pop()
        row = rows[pid]
        row["depth"] = depth
        out.append(row)
        stack.extend((kid, depth + 1) for kid in sorted(kids.get(pid, []), reverse=True))
    if len(out) < len(rows):  # a parent loop (pids reused while we read): still show them all
        shown = {row["pid"] for row in out}
        out += [rows[pid] for pid in sorted(rows) if pid not in shown]
    return out


def signal_member(members: dict[int, int], pid: int, sig: int, start_ticks: int | None = None) -> str | None:
    """Send `sig` to `pid` if it is one of `members` (and has `start_ticks`, when given).
    None when sent; else why not, in one line."""
    ticks = members.get(pid)
    if ticks is None:
        return f"process {pid} is not part of this job"
    if start_ticks is not None and start_ticks != ticks:
        return f"process {pid} is no longer the process that was shown (its pid was reused)"
    if not proctree.send(pid, ticks, sig):
        return f"process {pid} has exited"
    return None


def stdin_of(root: int | None) -> str | None:
    """What the job's stdin is (the pipe or the PTY), from its root's fd 0; None when gone."""
    return stats.fd_target(root, 0) if root and os.path.exists(f"/proc/{root}") else None
