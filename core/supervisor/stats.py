"""Live figures of a job's process tree, read cheaply from /proc. Stdlib only.

One module for everything that looks at a running job from the outside: the registry's
`poll`/`list` fields, `wait(until=...)`, the dashboard's sampler and the supervisor's
awaiting-input / quiet events all call these functions, so there is one process-tree walk.

- :func:`tree` walks a process's descendants through ``/proc/PID/task/TID/children`` (a few
  small reads for a job's tree; a full ``/proc`` scan through :mod:`proctree` where the kernel
  lacks those files).
- :func:`waiting_for_input`: a process of the tree blocked reading the job's stdin or terminal
  (``/proc/PID/syscall``), the dashboard's ``?`` mark.
- :class:`CpuMeter`: CPU % of a tree from the delta of its CPU ticks against the previous
  sample kept per key (the since-start average on the first call); never a blocking sample.
- :func:`listens_on`, :class:`Listeners`: the TCP ports the tree listens on (the kernel's
  listening sockets, from netlink sock_diag or else ``/proc/net/tcp{,6}``, matched to the tree's
  socket fds): ``wait(until="port:N")``, the ``ports`` of poll, list and tree.

The supervisor loads this file as a top-level module (``python -I -S``), hence the import below.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable

TYPE_CHECKING = False  # a type checker takes it as true; the supervisor does not load typing
if TYPE_CHECKING:
    from typing import Any

try:
    from . import proctree
except ImportError:  # the supervisor imports us as a top-level module next to proctree.py
    import proctree  # type: ignore[no-redef]

# The figures of a job with no process left.
IDLE = {"awaiting_input": False, "quiet_seconds": None, "cpu_percent": 0.0, "rss_bytes": 0, "process_count": 0,
        "stopped": False}
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
MIN_INTERVAL = 0.25  # seconds: a CPU delta over less is noise, the previous figure stands

# Syscall numbers of read-type and select-type calls, per architecture.
_SYSCALLS = {
    "x86_64": ({0, 17, 19, 295}, {23, 270}),  # read pread64 readv preadv | select pselect6
    "aarch64": ({63, 65, 67, 69}, {72}),  # read readv pread64 preadv | pselect6
}
_READS, _SELECT_ONLY = _SYSCALLS.get(os.uname().machine, _SYSCALLS["x86_64"])
_LISTEN = "0A"  # TCP state LISTEN in /proc/net/tcp
_TCP_LISTEN = 10  # the same state in a sock_diag request (linux/tcp_states.h)
_NETLINK_SOCK_DIAG, _SOCK_DIAG_BY_FAMILY = 4, 20  # linux/netlink.h, linux/sock_diag.h
_NLM_F_REQUEST, _NLM_F_DUMP, _NLMSG_ERROR, _NLMSG_DONE = 0x1, 0x300, 2, 3
_SWITCHES = b"\nvoluntary_ctxt_switches:"  # in /proc/PID/status


# --- trees ---------------------------------------------------------------------------------


def children(pid: int) -> list[int] | None:
    """Children of `pid` (every thread's), or None when the kernel has no `children` files."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                found.extend(int(p) for p in fh.read().split())
        except FileNotFoundError:
            if not os.path.exists(f"/proc/{pid}/task/{tid}"):
                continue  # the thread ended meanwhile
            return None
        except OSError:
            continue
    return found


def tree(root: int, include_root: bool = True) -> list[int]:
    """`root` (unless `include_root` is false) and its descendants, zombies included."""
    out = [root] if include_root else []
    kids = children(root)
    if kids is None:
        return out + proctree.descendants(root)
    stack = kids
    while stack:
        pid = stack.pop()
        out.append(pid)
        stack.extend(children(pid) or ())
    return out


def tree_stats(root: int, include_root: bool = True, root_fields: list[str] | None = None) -> dict[int, list[str]]:
    """Like :func:`tree`, with each live-or-zombie process's /proc stat fields (read once; its
    thread count lets a single-threaded process's children come from one file). `root_fields`:
    the root's fields if the caller has just read them."""
    found: dict[int, list[str]] = {}
    stack = [root]
    while stack:
        pid = stack.pop()
        fields = root_fields if pid == root and root_fields else proctree.stat_fields(pid)
        if fields is None:
            continue
        found[pid] = fields
        kids = _own_children(pid) if fields[17] == "1" else children(pid)  # field 20: num_threads
        if kids is None:  # no `children` files: the full scan
            walked = {p: proctree.stat_fields(p) for p in tree(root, include_root)}
            return {p: f for p, f in walked.items() if f is not None}
        stack.extend(kids)
    if not include_root:
        found.pop(root, None)
    return found


def _own_children(pid: int) -> list[int] | None:
    """Children of a single-threaded process (its one task's list); children() when that
    file is missing (the process went, or the kernel has no such files)."""
    try:
        fd = os.open(f"/proc/{pid}/task/{pid}/children", os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return children(pid)
    except OSError:
        return []
    try:
        data = chunk = os.read(fd, 1 << 16)
        while len(chunk) >= 4000:  # maybe one page of many: read on to the end
            chunk = os.read(fd, 1 << 16)
            data += chunk
        return [int(p) for p in data.split()]
    except OSError:
        return []
    finally:
        os.close(fd)


def fd_target(pid: int, fd: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/fd/{fd}")
    except OSError:
        return None


# --- waiting for input ---------------------------------------------------------------------


def waiting_for_input(pids: list[int], stdin_target: str | Callable[[], str | None] | None) -> bool:
    """True when a process of `pids` is blocked reading the job's stdin (see :func:`input_readers`)."""
    return bool(input_readers(pids, stdin_target, first=True))


def input_readers(pids: list[int], stdin_target: str | Callable[[], str | None] | None,
                  first: bool = False) -> list[int]:
    """The processes of `pids` blocked reading the job's stdin (only the first found with
    `first`). `stdin_target` may be a function giving it: called only when some process is in a
    read, most are not.

    From ``/proc/PID/syscall``: a ``read`` (or ``readv``/``pread``) on fd 0 or on an fd that is
    the same file as the job's stdin (`stdin_target`: the pipe or the PTY), or a
    ``select``/``pselect6`` watching only fd 0 (``nfds == 1``; how Python's readline and many
    REPLs wait). A process that runs, or reads another pipe (the consumer of ``a | b``), does
    not count.
    """
    found: list[int] = []
    for pid in pids:
        try:
            raw = (proctree.read_small(f"/proc/{pid}/syscall", 200) or b"").split()
        except OSError:
            continue
        if len(raw) < 2 or not raw[0].isdigit():
            continue  # "running" or "-1 ..." (not in a syscall)
        nr = int(raw[0])
        try:
            arg0 = int(raw[1], 16)
        except ValueError:
            continue
        if nr in _READS:
            fd = arg0
        elif nr in _SELECT_ONLY and arg0 == 1:
            fd = 0
        else:
            continue
        if callable(stdin_target):
            stdin_target = stdin_target()
        if (fd == 0 and stdin_target is None) or (stdin_target is not None and fd_target(pid, fd) == stdin_target):
            found.append(pid)
            if first:
                break
    return found


# --- CPU and memory ------------------------------------------------------------------------


def usage(pids: list[int]) -> tuple[int, int, int]:
    """(CPU ticks including reaped children's, RSS bytes, live process count) of `pids`."""
    return _usage(proctree.stat_fields(pid) for pid in pids)


def _usage(stats: Iterable[list[str] | None]) -> tuple[int, int, int]:
    ticks = rss = count = 0
    for fields in stats:
        if not fields:
            continue
        ticks += sum(int(fields[i]) for i in (11, 12, 13, 14))  # utime stime cutime cstime
        if fields[0] not in ("Z", "X"):
            rss += int(fields[21]) * PAGE_SIZE
            count += 1
    return ticks, rss, count


def reaped_ticks(pid: int) -> int:
    """CPU ticks of the children `pid` has reaped (the supervisor reaps the job's root and orphans)."""
    fields = proctree.stat_fields(pid)
    return int(fields[13]) + int(fields[14]) if fields else 0


class CpuMeter:
    """CPU % per key (a job) from the delta of its tree's CPU ticks since the previous call.

    A job's total (live processes' ticks plus what their reaped children used, plus what the
    supervisor reaped) only grows, so the delta is exact even when processes come and go.
    The first call for a key gives the average since `started_at`; a call less than
    MIN_INTERVAL after the previous one repeats the previous figure.
    """

    def __init__(self) -> None:
        self._prev: dict[str, tuple[float, int, float]] = {}  # key -> (monotonic, ticks, percent)

    def percent(self, key: str, ticks: int, started_at: float) -> float:
        now = time.monotonic()
        prev = self._prev.get(key)
        if prev is None:
            elapsed = max(time.time() - started_at, 1e-3)
            value = ticks / CLOCK_TICKS / elapsed * 100
        elif now - prev[0] < MIN_INTERVAL:
            return prev[2]
        else:
            value = max(0, ticks - prev[1]) / CLOCK_TICKS / (now - prev[0]) * 100
        value = round(value, 1)
        self._prev[key] = (now, ticks, value)
        return value

    def forget(self, keep: set[str]) -> None:
        for key in self._prev.keys() - keep:
            del self._prev[key]


# --- listening ports -----------------------------------------------------------------------


def socket_inodes(pids: Iterable[int]) -> set[str]:
    """Inodes (as text) of the sockets the processes hold open."""
    inodes: set[str] = set()
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            target = fd_target(pid, int(fd))
            if target and target.startswith("socket:["):
                inodes.add(target[8:-1])
    return inodes


def listening_sockets() -> dict[str, int]:
    """Every TCP socket (IPv4 and IPv6) in LISTEN state of this network namespace: inode -> port.

    Asked of the kernel through NETLINK_SOCK_DIAG, which walks only its table of listening
    sockets (0.1-0.3 ms); where netlink is refused, read from /proc/net/tcp{,6}, which walks
    every socket of the namespace (2-5 ms a file here)."""
    found = _diag_listeners()
    return found if found is not None else _proc_listeners()


def _diag_listeners() -> dict[str, int] | None:
    """The listening TCP sockets from a sock_diag dump of each family; None when it fails."""
    import socket  # only a question about ports loads it; a supervisor's start does not
    import struct

    found: dict[str, int] = {}
    try:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG) as sock:
            sock.settimeout(2.0)
            for family in (socket.AF_INET, socket.AF_INET6):
                # nlmsghdr (len, type, flags, seq, pid) + inet_diag_req_v2 (family, protocol, ext,
                # pad, states, a zeroed inet_diag_sockid of 48 bytes)
                sock.send(struct.pack("=IHHII", 72, _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST | _NLM_F_DUMP, family, 0)
                          + struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, 1 << _TCP_LISTEN) + bytes(48))
                if not _diag_replies(sock, struct, found):
                    return None
    except (AttributeError, OSError, ValueError, struct.error):
        return None
    return found


def _diag_replies(sock: Any, struct: Any, found: dict[str, int]) -> bool:
    """Read one dump's replies into `found` (inode -> port); False on an error reply."""
    while True:
        data = sock.recv(1 << 16)
        at = 0
        while at + 16 <= len(data):
            length, kind = struct.unpack_from("=IH", data, at)
            if kind == _NLMSG_DONE:
                return True
            if kind == _NLMSG_ERROR or length < 16:
                return False
            if length >= 16 + 72:  # inet_diag_msg: its id's source port at 4, its inode at 68
                port = struct.unpack_from(">H", data, at + 16 + 4)[0]
                inode = struct.unpack_from("=I", data, at + 16 + 68)[0]
                if inode:
                    found[str(inode)] = port
            at += (length + 3) & ~3
        if not data:
            return False


def _proc_listeners() -> dict[str, int]:
    found: dict[str, int] = {}
    for name in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(name) as fh:
                next(fh, None)
                for line in fh:
                    parts = line.split()
                    if len(parts) > 9 and parts[3] == _LISTEN and parts[9] != "0":
                        found[parts[9]] = int(parts[1].rsplit(":", 1)[1], 16)
        except OSError:
            continue
    return found


def listening_ports(inodes: set[str]) -> set[int]:
    """TCP ports (IPv4 and IPv6) in LISTEN state whose socket inode is in `inodes`."""
    if not inodes:
        return set()
    return {port for inode, port in listening_sockets().items() if inode in inodes}


def listens_on(pids: list[int], port: int) -> bool:
    return port in listening_ports(socket_inodes(pids))


class Listeners:
    """The listening TCP sockets, asked of the kernel once (when first needed) for many
    questions: the `ports` of every job of one list(), of every process of one tree."""

    def __init__(self) -> None:
        self._table: dict[str, int] | None = None

    def table(self) -> dict[str, int]:
        if self._table is None:
            self._table = listening_sockets()
        return self._table

    def ports(self, pids: Iterable[int]) -> list[int]:
        """The ports the processes `pids` listen on, sorted (the table is not asked for when
        they hold no socket: most jobs)."""
        inodes = socket_inodes(pids)
        if not inodes:
            return []
        table = self.table()
        return sorted({table[inode] for inode in inodes if inode in table})


def voluntary_switches(pid: int) -> int | None:
    """How often the process has blocked so far (`voluntary_ctxt_switches` of /proc/PID/status):
    a process found reading its stdin with a count other than before has gone back to reading
    since (it took the input given meanwhile). None when it is gone."""
    raw = proctree.read_small(f"/proc/{pid}/status", 8192) or b""
    at = raw.find(_SWITCHES)
    if at < 0:
        return None
    value = raw[at + len(_SWITCHES):raw.find(b"\n", at + 1)].strip()
    return int(value) if value.isdigit() else None


# --- a job's figures -----------------------------------------------------------------------


def job_tree(supervisor_pid: int | None, root: int | None) -> list[int]:
    """A running job's processes: everything under its supervisor (a subreaper, so orphans stay
    there), or the root's tree when the supervisor is gone."""
    if supervisor_pid:
        return tree(supervisor_pid, include_root=False)
    return tree(root) if root and proctree.is_alive(root) else []


def job_figures(key: str, meter: CpuMeter, *, supervisor_pid: int | None, root: int | None,
                running: bool, started_at: float, log_path: str,
                supervisor_stat: list[str] | None = None, log_stat: os.stat_result | None = None,
                listeners: Listeners | None = None) -> dict[str, Any]:
    """The poll/list fields: awaiting_input, quiet_seconds, cpu_percent, rss_bytes, process_count,
    ports, stopped (the job's root process is stopped: `signal ID STOP`, Ctrl-Z in its terminal).

    `supervisor_pid` is given only while the supervisor lives (`supervisor_stat`: its /proc
    stat fields, when just read); `running`: the job's root has not exited. A finished job
    whose tree is gone gets zeros, ``quiet_seconds: None`` and no ports. `listeners`: the
    listening sockets, when the caller asks about many jobs at once.
    """
    reaped = 0
    if supervisor_pid:  # one stat read per process of the tree, the supervisor's included
        found = tree_stats(supervisor_pid, root_fields=supervisor_stat)
        own = found.pop(supervisor_pid, None)
        reaped = int(own[13]) + int(own[14]) if own else 0
        pids, ticks_rss_count = list(found), _usage(found.values())
        root_fields = found.get(root) if root else None
    else:
        pids = job_tree(None, root if running else None)
        ticks_rss_count = usage(pids)
        root_fields = proctree.stat_fields(root) if root and pids else None
    figures: dict[str, Any] = {**IDLE, "ports": []}
    if pids:
        ticks, rss, count = ticks_rss_count
        figures.update(cpu_percent=meter.percent(key, ticks + reaped, started_at), rss_bytes=rss,
                       process_count=count, ports=(listeners or Listeners()).ports(pids))
    if running:
        figures["awaiting_input"] = waiting_for_input(pids, (lambda: fd_target(root, 0)) if root else None)
        figures["quiet_seconds"] = quiet_seconds(log_path, started_at, log_stat)
        figures["stopped"] = root_fields is not None and root_fields[0] == "T"
    return figures


def quiet_seconds(log_path: str, started_at: float, st: os.stat_result | None = None) -> float:
    """Seconds since the job last wrote output (the log's mtime; its start if it wrote nothing).
    `st`: the log's stat, when the caller has just taken it."""
    try:
        st = st or os.stat(log_path)
        last = st.st_mtime if st.st_size else started_at
    except OSError:
        last = started_at
    return round(max(0.0, time.time() - last), 3)
