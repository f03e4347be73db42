"""Background sampling of every job: one thread reads the core, the UI only gets snapshots.

The :class:`Sampler` thread wakes about once a second (or at once after :meth:`Sampler.poke`),
lists the jobs with ``registry.list()``, measures the CPU % and RSS of each running job's whole
process tree with psutil, the time since its last output (the log file's mtime) and whether it
seems to wait for input (a process of the tree blocked reading the job's stdin, from
``/proc/PID/syscall``), and posts one :class:`Sampler.Snapshot` message to the app.  It then
re-arms itself; when a sample is slow (hundreds of jobs) the interval grows so the sampler never
takes more than ~10 % of a core.

Nothing here touches Textual widgets: the thread only calls ``post_message`` (thread-safe).
"""

from __future__ import annotations

import os
import platform
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

import psutil
from textual.message import Message

__all__ = ["JobRow", "Sampler", "TreeStats", "waiting_for_input", "status_label"]


# --- "waiting for input" from /proc --------------------------------------------------------

# Syscall numbers of read-type and select-type calls, per architecture.
_SYSCALLS = {
    "x86_64": ({0, 17, 19, 295}, {7, 23, 270, 271}),  # read pread64 readv preadv | poll select pselect6 ppoll
    "aarch64": ({63, 65, 67, 69}, {72, 73}),  # read readv pread64 preadv | pselect6 ppoll
}
_READS, _SELECTS = _SYSCALLS.get(platform.machine(), _SYSCALLS["x86_64"])
_SELECT_ONLY = {23, 270} if platform.machine() != "aarch64" else {72}


def _fd_target(pid: int, fd: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/fd/{fd}")
    except OSError:
        return None


def waiting_for_input(pids: list[int], stdin_target: str | None) -> bool:
    """True when a process of ``pids`` is blocked reading the job's stdin.

    Read from ``/proc/PID/syscall``: a ``read`` (or ``readv``/``pread``) on fd 0 or on an fd
    that is the same file as the job's stdin (``stdin_target``: the pipe or the PTY), or a
    ``select``/``pselect6`` watching only fd 0 (``nfds == 1``; this is how Python's readline
    and many REPLs wait).  A process that is running, or reading another pipe (the consumer
    side of ``a | b``), does not count.
    """
    for pid in pids:
        try:
            with open(f"/proc/{pid}/syscall", "rb") as fh:
                raw = fh.read(200).split()
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
            if arg0 == 0:
                if stdin_target is None or _fd_target(pid, 0) == stdin_target:
                    return True
            elif stdin_target is not None and _fd_target(pid, arg0) == stdin_target:
                return True
        elif nr in _SELECT_ONLY and arg0 == 1:
            if stdin_target is None or _fd_target(pid, 0) == stdin_target:
                return True
    return False


# --- process trees ------------------------------------------------------------------------


def _children_map() -> dict[int, list[int]]:
    """ppid -> child pids for every live process (one pass over /proc)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                raw = fh.read()
        except OSError:
            continue
        rest = raw[raw.rfind(b")") + 2:].split(None, 3)
        if len(rest) < 2 or rest[0] in (b"Z", b"X"):
            continue
        children.setdefault(int(rest[1]), []).append(int(name))
    return children


def _tree(root: int, children: dict[int, list[int]]) -> list[int]:
    out = [root]
    stack = list(children.get(root, ()))
    while stack:
        pid = stack.pop()
        out.append(pid)
        stack.extend(children.get(pid, ()))
    return out


@dataclass(frozen=True, slots=True)
class TreeStats:
    cpu: float  # percent of one core, summed over the tree
    rss: int  # bytes, summed over the tree
    pids: tuple[int, ...]


class _ProcCache:
    """psutil.Process objects kept between samples so cpu_percent() measures an interval."""

    def __init__(self) -> None:
        self._procs: dict[int, psutil.Process] = {}

    def stats(self, pids: list[int]) -> TreeStats:
        cpu = 0.0
        rss = 0
        alive: list[int] = []
        for pid in pids:
            proc = self._procs.get(pid)
            try:
                if proc is None or not proc.is_running():
                    proc = psutil.Process(pid)
                    self._procs[pid] = proc
                with proc.oneshot():
                    cpu += proc.cpu_percent(None)
                    rss += proc.memory_info().rss
                alive.append(pid)
            except (psutil.Error, OSError):
                self._procs.pop(pid, None)
        return TreeStats(cpu, rss, tuple(alive))

    def forget_except(self, keep: set[int]) -> None:
        for pid in list(self._procs):
            if pid not in keep:
                del self._procs[pid]


# --- rows ---------------------------------------------------------------------------------


def status_label(job: dict[str, Any]) -> str:
    """``running``, ``exited N``, ``killed``, ``timed out``, ``lost``."""
    status = job.get("status")
    if status == "running":
        return "running"
    if status != "exited":
        return str(status or "unknown")  # e.g. "corrupt"
    reason = job.get("completion_reason") or "exited"
    if reason == "exited":
        code = job.get("exit_code")
        return f"exited {code}" if code is not None else "exited"
    return reason.replace("_", " ")


def _parse_ts(value: Any) -> float:
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and value:
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return 0.0
    return 0.0


@dataclass(frozen=True, slots=True)
class JobRow:
    """One job as the table shows it: plain values, cheap to compare."""

    session_id: str
    name: str
    command: str
    cwd: str
    pid: int | None
    pty: bool
    status: str  # "running" or "exited"
    label: str  # status_label()
    exit_code: int | None
    started: float  # epoch seconds
    uptime: float  # seconds (run time so far, or total run time when exited)
    cpu: float | None = None
    rss: int | None = None
    silence: float | None = None  # seconds since the last output (running jobs)
    waiting: bool = False
    order: int = 0  # position in registry.list() (newest first)

    @property
    def running(self) -> bool:
        return self.status == "running"

    @property
    def title(self) -> str:
        return self.name or self.command


@dataclass(slots=True)
class SnapshotData:
    jobs: list[JobRow]
    taken_at: float
    elapsed: float  # seconds the sample took
    selected: str | None = None
    inputs: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None


class Sampler(threading.Thread):
    """Daemon thread: sample the registry, post :class:`Sampler.Snapshot` to ``target``."""

    class Snapshot(Message):
        """A new sample of every job (and the selected job's input history)."""

        def __init__(self, data: SnapshotData) -> None:
            super().__init__()
            self.data = data

    TREE_RESCAN = 5.0  # seconds between full /proc scans for job descendants
    WATCH_GAP = 0.05  # at most one change-triggered sample per this many seconds

    def __init__(
        self,
        registry: Any,
        target: Any,
        *,
        interval: float = 1.0,
        consumer: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(name="hermes-procs-sampler", daemon=True)
        self.registry = registry
        self.target = target
        self.interval = interval
        self.consumer = consumer or f"dashboard-{os.getpid()}"
        self.selected: str | None = None
        self._clock = clock
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._procs = _ProcCache()
        self._last_list: list[dict[str, Any]] | None = None
        self._last_stamp: int | None = None
        self._last_list_at = 0.0
        self._children: dict[int, list[int]] = {}
        self._children_at = float("-inf")
        self._scanned_pids: set[int] = set()

    # control (any thread)
    def poke(self) -> None:
        """Sample now instead of at the next tick."""
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self.registry.forget_consumer(self.consumer)

    def run(self) -> None:
        self._watch_home()
        delay = 0.0
        while not self._stop.is_set():
            if delay:
                self._wake.wait(delay)
            self._wake.clear()
            if self._stop.is_set():
                break
            data = self.sample()
            if self._stop.is_set():
                break
            self.target.post_message(self.Snapshot(data))
            # re-arm: never spend more than ~10 % of a core sampling
            delay = max(self.interval, data.elapsed * 10)

    def _watch_home(self) -> None:
        """Sample as soon as a job appears, exits or goes (inotify, core/watch.py), not only at
        the next tick; a burst of changes is one sample per WATCH_GAP seconds."""
        home = getattr(self.registry, "home", None)
        if home is None:
            return
        from hermes_procs.core.watch import HomeWatch

        watch = HomeWatch(home)
        if not watch.pushed:  # polling would only repeat what the tick does
            watch.close()
            return

        def loop() -> None:
            with watch:
                while not self._stop.is_set():
                    if watch.wait(0.5):
                        self.poke()
                        self._stop.wait(self.WATCH_GAP)

        threading.Thread(target=loop, name="hermes-procs-watch", daemon=True).start()

    # one sample (sampler thread; also callable directly in tests)
    def sample(self) -> SnapshotData:
        t0 = time.perf_counter()
        now = self._clock()
        selected = self.selected
        error = None
        try:
            jobs = self._list()
        except Exception as exc:  # the core must not take the dashboard down
            jobs = []
            error = f"listing jobs failed: {exc}"
        if not isinstance(jobs, list):
            error = (jobs or {}).get("error", "listing jobs failed") if isinstance(jobs, dict) else "listing jobs failed"
            jobs = []
        running = [j for j in jobs if j.get("status") == "running" and j.get("pid")]
        children = self._children_for(running)
        rows: list[JobRow] = []
        keep: set[int] = set()
        for order, job in enumerate(jobs):
            rows.append(self._row(job, now, children, keep, order))
        self._procs.forget_except(keep)
        inputs: list[dict[str, Any]] = []
        if selected:
            try:
                got = self.registry.inputs(selected, limit=6)
                if isinstance(got, list):
                    inputs = got
            except Exception:
                pass
        events: list[dict[str, Any]] = []
        try:
            drained = self.registry.drain_events(consumer=self.consumer, only_new=True)
            if isinstance(drained, list):
                events = drained
        except Exception:
            pass
        return SnapshotData(
            jobs=rows,
            taken_at=now,
            elapsed=time.perf_counter() - t0,
            selected=selected,
            inputs=inputs,
            events=events,
            error=error,
        )

    def _list(self) -> list[dict[str, Any]]:
        """``registry.list()``, skipped while nothing can have changed: no job was running at
        the last sample and the jobs folder (where a new job appears) is untouched."""
        jobs_dir = getattr(self.registry, "jobs_dir", None)
        try:
            stamp = os.stat(jobs_dir).st_mtime_ns if jobs_dir is not None else None
        except OSError:
            stamp = None
        last = self._last_list
        if (stamp is not None and last is not None and stamp == self._last_stamp
                and time.monotonic() - self._last_list_at < 30
                and not any(j.get("status") == "running" for j in last)):
            return last
        jobs = self.registry.list()
        self._last_list, self._last_stamp, self._last_list_at = jobs, stamp, time.monotonic()
        return jobs

    def _children_for(self, running: list[dict[str, Any]]) -> dict[int, list[int]]:
        """The ppid -> children map; the /proc scan (the costliest part of a sample) is redone
        every few seconds, or at once when a job root it has not seen appears."""
        if not running:
            return {}
        now = time.monotonic()
        roots = {int(j["pid"]) for j in running}
        if now - self._children_at > self.TREE_RESCAN or not roots <= self._scanned_pids:
            self._children = _children_map()
            self._children_at = now
            self._scanned_pids = {pid for kids in self._children.values() for pid in kids}
        return self._children

    def _row(self, job: dict[str, Any], now: float, children: dict[int, list[int]], keep: set[int],
             order: int = 0) -> JobRow:
        sid = job.get("session_id", "")
        started = _parse_ts(job.get("started_at"))
        running = job.get("status") == "running"
        pid = job.get("pid")
        cpu = rss = silence = None
        waiting = False
        if running and pid:
            pids = _tree(int(pid), children)
            stats = self._procs.stats(pids)
            keep.update(stats.pids)
            cpu, rss = stats.cpu, stats.rss
            if stats.pids:
                waiting = waiting_for_input(list(stats.pids), _fd_target(int(pid), 0))
            silence = self._silence(sid, now, started)
        return JobRow(
            session_id=sid,
            name=job.get("name") or "",
            command=job.get("command") or "",
            cwd=job.get("cwd") or "",
            pid=pid,
            pty=bool(job.get("pty")),
            status="running" if running else "exited",
            label=status_label(job),
            exit_code=job.get("exit_code"),
            started=started,
            uptime=float(job.get("uptime_seconds") or 0.0),
            cpu=cpu,
            rss=rss,
            silence=silence,
            waiting=waiting,
            order=order,
        )

    def _silence(self, sid: str, now: float, started: float) -> float | None:
        try:
            path = Path(self.registry.job_dir(sid)) / "output.log"
            mtime = path.stat().st_mtime
        except Exception:
            mtime = started or None
        if mtime is None:
            return None
        return max(0.0, now - mtime)
