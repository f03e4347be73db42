"""Process identity and trees from /proc, and killing a tree. Stdlib only: the supervisor imports it.

A process is named by (pid, start ticks): field 22 of /proc/PID/stat. A pid whose start ticks
differ is a recycled pid and is never signalled.
"""

from __future__ import annotations

import os
import signal
import time

HANGUP_AFTER = 0.2  # seconds between TERM and HUP for the root of a PTY job


def stat_fields(pid: int) -> list[str] | None:
    """Fields of /proc/PID/stat after the command name (index 0 = state), or None if gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return raw[raw.rfind(b")") + 2:].decode().split()


def start_ticks(pid: int) -> int | None:
    fields = stat_fields(pid)
    return int(fields[19]) if fields else None


def is_alive(pid: int, ticks: int | None = None) -> bool:
    """True when `pid` runs (not a zombie) and, if `ticks` is given, is the same process."""
    fields = stat_fields(pid)
    if not fields or fields[0] in ("Z", "X"):
        return False
    return ticks is None or int(fields[19]) == ticks


def _parents_and_sessions() -> tuple[dict[int, list[int]], dict[int, tuple[int, int]]]:
    children: dict[int, list[int]] = {}
    groups: dict[int, tuple[int, int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        fields = stat_fields(int(name))
        if not fields or fields[0] in ("Z", "X"):
            continue
        pid = int(name)
        children.setdefault(int(fields[1]), []).append(pid)
        groups[pid] = (int(fields[2]), int(fields[3]))
    return children, groups


def descendants(root: int, session: int | None = None) -> list[int]:
    """Live descendants of `root`, plus live members of process group/session `session`."""
    children, groups = _parents_and_sessions()
    found: list[int] = []
    stack = list(children.get(root, []))
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    if session is not None:
        me = os.getpid()
        for pid, (pgid, sid) in groups.items():
            if (pgid == session or sid == session) and pid not in found and pid not in (root, me):
                found.append(pid)
    return found


def session_members(session: int) -> list[int]:
    """Live processes whose process group or session is `session`."""
    return descendants(-1, session)


def snapshot(pids: list[int]) -> dict[int, int]:
    """pid -> start ticks for the pids still alive."""
    result = {}
    for pid in pids:
        ticks = start_ticks(pid)
        if ticks is not None and is_alive(pid, ticks):
            result[pid] = ticks
    return result


def signal_all(procs: dict[int, int], sig: int) -> None:
    """Send `sig` to each (pid, ticks) still the same process."""
    for pid, ticks in procs.items():
        if is_alive(pid, ticks):
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass


def survivors(procs: dict[int, int]) -> list[int]:
    return sorted(pid for pid, ticks in procs.items() if is_alive(pid, ticks))


def kill_tree(root: int | None, root_ticks: int | None, extra_root: int | None = None,
              session: int | None = None, grace: float = 3.0, reap=None, hangup: bool = False) -> list[int]:
    """TERM the root then its descendants, wait `grace`, KILL what survives; return survivors.

    `extra_root` is a process whose descendants belong to the tree (the supervisor, a subreaper);
    `reap` is called while waiting so a parent can collect its zombies. With `hangup` (a PTY
    job), a root still alive shortly after TERM also gets HUP, as when its terminal closes:
    interactive shells ignore TERM but leave on HUP.
    """
    tree: dict[int, int] = {}
    if root is not None and root_ticks is not None and is_alive(root, root_ticks):
        tree[root] = root_ticks
    tree.update(snapshot(_tree_pids(root, extra_root, session)))
    rooted = {p: t for p, t in tree.items() if p == root}
    signal_all(rooted, signal.SIGTERM)
    signal_all({p: t for p, t in tree.items() if p != root}, signal.SIGTERM)
    if hangup and rooted:
        first = min(HANGUP_AFTER, grace)
        _wait_gone(tree, first, reap)
        signal_all(rooted, signal.SIGHUP)
        grace -= first
    _wait_gone(tree, grace, reap)
    tree.update(snapshot(_tree_pids(root, extra_root, session)))
    alive = {p: t for p, t in tree.items() if is_alive(p, t)}
    if alive:
        signal_all(alive, signal.SIGKILL)
        _wait_gone(alive, 2.0, reap)
    return survivors(tree)


def _tree_pids(root: int | None, extra_root: int | None, session: int | None) -> list[int]:
    pids: list[int] = []
    for top in (root, extra_root):
        if top is not None:
            pids.extend(p for p in descendants(top, session) if p not in pids)
    return [p for p in pids if p != os.getpid()]


def _wait_gone(procs: dict[int, int], timeout: float, reap) -> None:
    deadline = time.monotonic() + timeout
    delay = 0.002
    while True:
        if reap:
            reap()
        if not survivors(procs) or time.monotonic() >= deadline:
            return
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
