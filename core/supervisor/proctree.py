"""Process identity, a job's process tree, and killing it. Stdlib only: the supervisor imports it.

A process is named by (pid, start ticks): field 22 of /proc/PID/stat. A pid whose start ticks
differ is a recycled pid and is never signalled. The rule for what belongs to a job:

- a process whose identity was recorded as the job's (its root, its supervisor, the leftovers
  the supervisor wrote down when it finished), if that identity still matches;
- every descendant of such a live, identity-checked member;
- members of the job's session / process group, only while the session leader (the job's root)
  still has its recorded identity (alive or an unreaped zombie): once the leader is gone its pid
  may belong to a stranger's session.

Signals go through a pidfd opened before the identity check where the kernel has them, so a pid
recycled between the check and the signal is never hit.
"""

from __future__ import annotations

import os
import signal
import time

HANGUP_AFTER = 0.2  # seconds between TERM and HUP for the root of a PTY job
RESCAN_EVERY = 0.1  # during a kill's grace period, look for new members this often
FREEZE_ROUNDS = 500  # SIGSTOP passes before giving up on a tree that keeps growing
REREAD_PASSES = 8  # rounds of re-reading the members' children lists within one scan
QUIET_SCANS = 3  # scans in a row that find nothing new before a tree counts as gone / frozen
TYPE_CHECKING = False  # a type checker takes it as true; the supervisor does not load typing
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Optional

    Reap = Optional[Callable[[], None]]  # called while waiting, so a parent can collect its zombies


class Row:
    """One line of the process table."""

    __slots__ = ("pgid", "ppid", "sid", "state", "ticks")

    def __init__(self, ppid: int, pgid: int, sid: int, ticks: int, state: str) -> None:
        self.ppid, self.pgid, self.sid, self.ticks, self.state = ppid, pgid, sid, ticks, state


def stat_fields(pid: int) -> list[str] | None:
    """Fields of /proc/PID/stat after the command name (index 0 = state), or None if gone."""
    raw = read_small(f"/proc/{pid}/stat")
    return raw[raw.rfind(b")") + 2:].decode().split() if raw is not None else None


def read_small(path: str, size: int = 4096) -> bytes | None:
    """Up to `size` bytes of a small /proc file in one read (no file object: the figures of a
    list read several per job), or None if it is gone (or not ours to read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    try:
        return os.read(fd, size)
    except (ProcessLookupError, PermissionError):  # ESRCH: it exited after the open
        return None
    finally:
        os.close(fd)


def start_ticks(pid: int) -> int | None:
    fields = stat_fields(pid)
    return int(fields[19]) if fields else None


def state(pid: int, ticks: int | None = None) -> str | None:
    """The process state letter (R, S, T, Z, ...) or None if gone or not the same process."""
    fields = stat_fields(pid)
    if not fields or (ticks is not None and int(fields[19]) != ticks):
        return None
    return fields[0]


def is_alive(pid: int, ticks: int | None = None) -> bool:
    """True when `pid` runs (not a zombie) and, if `ticks` is given, is the same process."""
    return state(pid, ticks) not in (None, "Z", "X")


def ignores(pid: int, signum: int) -> bool:
    """Whether the process has `signum` set to be ignored (its SigIgn mask in /proc)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"SigIgn:"):
                    return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    except (OSError, ValueError, IndexError):
        pass
    return False


def is_stopped(pid: int, ticks: int | None = None) -> bool:
    """True when the process is stopped (SIGSTOP, or traced)."""
    return state(pid, ticks) in ("T", "t")


def table() -> dict[int, Row]:
    """Every live (not zombie) process."""
    rows: dict[int, Row] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        fields = stat_fields(int(name))
        if fields and fields[0] not in ("Z", "X"):
            rows[int(name)] = Row(int(fields[1]), int(fields[2]), int(fields[3]), int(fields[19]), fields[0])
    return rows


def members(known: Mapping[int, int | None], session: int | None = None,
            leader_ticks: int | None = None) -> dict[int, int]:
    """The job's live processes (pid -> ticks) by the rule at the top of this module.

    `known` are recorded identities; `session` is the job's session / process group id, trusted
    only while the process `session` has `leader_ticks`. Descendants are found through each
    process's children list, a few reads instead of a scan of all of /proc: fast enough to keep
    up with a process that forks and exits every millisecond.
    """
    seeds = [pid for pid, ticks in known.items() if is_alive(pid, ticks)]
    if session is not None and leader_ticks is not None and _leader_matches(session, leader_ticks):
        in_session = [pid for pid, row in table().items() if session in (row.sid, row.pgid)]
        if _leader_matches(session, leader_ticks):  # not if the leader went while we looked
            seeds += in_session
    found: dict[int, int] = {}
    dead: set[int] = set()
    stack = seeds
    for _ in range(REREAD_PASSES):
        _walk(stack, found, dead)
        # A member that exits while we walk hands its children to its reaper, whose children
        # list we may have read already (a fork bomb under a frozen supervisor escaped every
        # scan that way): read the members' lists again until they hold nobody new.
        stack = [kid for pid in list(found) for kid in children(pid) if kid not in found and kid not in dead]
        if not stack:
            break
    return found


def _walk(stack: list[int], found: dict[int, int], dead: set[int]) -> None:
    """Add the live processes of `stack` and their descendants to `found` (zombies to `dead`)."""
    while stack:
        pid = stack.pop()
        if pid in found or pid in dead:
            continue
        fields = stat_fields(pid)
        if not fields or fields[0] in ("Z", "X"):
            dead.add(pid)
            continue
        found[pid] = int(fields[19])
        kids = children(pid)
        if start_ticks(pid) == found[pid]:  # still the same parent after reading its children
            stack.extend(kids)


def children(pid: int) -> list[int]:
    """The children of every thread of `pid` (orphans re-parented to a subreaper included)."""
    kids: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return kids
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                kids.extend(int(k) for k in fh.read().split())
        except OSError:
            pass
    return kids


def descendants(root: int) -> list[int]:
    """Every live descendant of `root`, from one scan of /proc (for kernels without the
    `children` files that :func:`children` reads; stats.tree falls back to it)."""
    kids: dict[int, list[int]] = {}
    for pid, row in table().items():
        kids.setdefault(row.ppid, []).append(pid)
    found: list[int] = []
    stack = list(kids.get(root, []))
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(kids.get(pid, []))
    return found


def group_members(leader: int, ticks: int) -> dict[int, int]:
    """The live processes (pid -> ticks) of the process group `leader` leads, only while the
    leader still has its recorded identity (alive or an unreaped zombie): once it is gone, its
    pid may lead a stranger's group."""
    if not _leader_matches(leader, ticks):
        return {}
    found = {pid: row.ticks for pid, row in table().items() if row.pgid == leader}
    return found if _leader_matches(leader, ticks) else {}  # not if the leader went while we looked


def _leader_matches(pid: int, ticks: int) -> bool:
    return start_ticks(pid) == ticks  # a zombie leader (not yet reaped) still holds its session


def send(pid: int, ticks: int, sig: int) -> bool:
    """Signal the process (pid, ticks) if it is still that process; True if signalled."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return False
    except (AttributeError, OSError):  # no pidfd here: check, then kill (a tiny window remains)
        if start_ticks(pid) != ticks:
            return False
        try:
            os.kill(pid, sig)
            return True
        except (ProcessLookupError, PermissionError):
            return False
    try:
        if start_ticks(pid) != ticks:  # the pidfd names whoever had the pid when opened
            return False
        signal.pidfd_send_signal(fd, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False
    finally:
        os.close(fd)


def signal_all(procs: dict[int, int], sig: int) -> None:
    """Send `sig` to each (pid, ticks) still the same process."""
    for pid, ticks in procs.items():
        send(pid, ticks, sig)


def terminate(procs: dict[int, int]) -> None:
    """TERM each process, then CONT (a stopped one gets its TERM only once it runs again)."""
    signal_all(procs, signal.SIGTERM)
    signal_all(procs, signal.SIGCONT)


def survivors(procs: dict[int, int]) -> list[int]:
    return sorted(pid for pid, ticks in procs.items() if is_alive(pid, ticks))


class Deadline:
    """When a kill's grace period ends; a later kill with a shorter grace moves it earlier."""

    def __init__(self, grace: float) -> None:
        self.at = time.monotonic() + grace

    def shorten(self, grace: float) -> None:
        self.at = min(self.at, time.monotonic() + grace)

    def left(self) -> float:
        return max(0.0, self.at - time.monotonic())


class Tree:
    """Who belongs to a job, for `kill_tree`: recorded identities, the session, and the pids
    never to signal (the caller, a supervisor whose descendants are the job's)."""

    def __init__(self, known: Mapping[int, int | None], session: int | None = None, leader_ticks: int | None = None,
                 spare: tuple[int, ...] = ()) -> None:
        self.known = dict(known)
        self.session, self.leader_ticks = session, leader_ticks
        self.spare = {os.getpid(), *spare}

    def scan(self, seen: Mapping[int, int] | None = None) -> dict[int, int]:
        """The members now; members already `seen` seed the search too (their identity is checked)."""
        found = members({**(seen or {}), **self.known}, self.session, self.leader_ticks)
        return {pid: ticks for pid, ticks in found.items() if pid not in self.spare}


def kill_tree(tree: Tree, grace: float | Deadline = 3.0, reap: Reap = None,
              root: tuple[int, int] | None = None, pty: bool = False) -> list[int]:
    """TERM the job's processes, wait for the grace period, then freeze and KILL what is left.

    New members that appear during the grace period get TERM too. `reap` is called while
    waiting so a parent can collect its zombies. `root` is the (pid, ticks) of the job's root
    process: it gets TERM first (a shell passes it on to its children); if it ignores TERM (an
    interactive shell: Hermes runs jobs in `bash -lic`) it gets HUP at once, before its children
    die of TERM (a `while` loop would run its body again for each, until the grace ends); with
    `pty`, a root still alive shortly after TERM gets HUP too, as when its terminal closes.
    Each TERM is followed by CONT, as systemd sends them: a stopped process (``signal STOP``, a
    shell's Ctrl-Z) acts on its TERM at once instead of sleeping through the grace period.
    Returns the pids that survived.
    """
    deadline = grace if isinstance(grace, Deadline) else Deadline(grace)
    seen = tree.scan()
    root = root if root and root[0] in seen else None
    if root:
        send(*root, signal.SIGTERM)
        if ignores(root[0], signal.SIGTERM):
            send(*root, signal.SIGHUP)
            _wait_gone(dict([root]), min(HANGUP_AFTER, deadline.left()), reap)
    terminate(seen)
    if root and pty:
        _wait_gone(seen, min(HANGUP_AFTER, deadline.left()), reap)
        send(*root, signal.SIGHUP)
    quiet = 0
    while deadline.left() > 0 or quiet:
        _wait_gone(seen, min(RESCAN_EVERY, deadline.left()), reap)
        settled = not survivors(seen)  # all gone before the scan: then what they forked is in it
        new = {p: t for p, t in tree.scan(_alive(seen)).items() if p not in seen}
        seen.update(new)
        terminate(new)
        quiet = quiet + 1 if settled and not new else 0
        if quiet >= QUIET_SCANS:
            return []
        if quiet:
            time.sleep(0.002)
    return freeze_and_kill(tree, seen, reap)


def freeze_and_kill(tree: Tree, seen: dict[int, int], reap: Reap = None) -> list[int]:
    """SIGSTOP every member until the set stops growing (a stopped process cannot fork), then
    SIGKILL them all: a tree that re-forks faster than a scan cannot outrun it. A children list
    read while it changes may miss an entry: the set counts as stable after several quiet scans."""
    left: dict[int, int] = {}
    for _ in range(3):
        stopped: dict[int, int] = {}
        quiet = 0
        for _ in range(FREEZE_ROUNDS):
            # stopped (or dead) before the scan: then whatever they forked is in the scan
            settled = all(state(p, t) in (None, "T", "t", "Z", "X") for p, t in stopped.items())
            new = {p: t for p, t in tree.scan(_alive({**seen, **stopped})).items() if p not in stopped}
            signal_all(new, signal.SIGSTOP)
            stopped.update(new)
            quiet = quiet + 1 if settled and not new else 0
            if quiet >= QUIET_SCANS:
                break
            time.sleep(0.001)  # a SIGSTOP sent is not yet a process stopped
        seen.update(stopped)
        signal_all(stopped, signal.SIGKILL)
        _wait_gone(stopped, 2.0, reap)
        left = tree.scan(_alive(seen))
        if not left and not survivors(seen):
            return []
    return sorted(set(survivors(seen)) | set(left))


def _alive(procs: dict[int, int]) -> dict[int, int]:
    return {p: t for p, t in procs.items() if is_alive(p, t)}


def _wait_gone(procs: dict[int, int], timeout: float, reap: Reap) -> None:
    deadline = time.monotonic() + timeout
    delay = 0.002
    while True:
        if reap:
            reap()
        if not survivors(procs) or time.monotonic() >= deadline:
            return
        time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
        delay = min(delay * 2, 0.05)
