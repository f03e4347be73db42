"""Background sampling of every job: one thread reads the core, the UI only gets snapshots.

The :class:`Sampler` thread wakes about once a second (or at once after :meth:`Sampler.poke`),
lists the jobs with ``registry.list()`` (whose rows carry the CPU %, RSS, time since the last
output and whether the job waits for input, measured by ``hermes_procs.core.supervisor.stats``: the same
figures an agent gets), and posts one :class:`Sampler.Snapshot` message to the app.  It then
re-arms itself; when a sample is slow (hundreds of jobs) the interval grows so the sampler never
takes more than ~10 % of a core, ~25 % while jobs keep starting and ending (each poke still waits
three times the last sample's time). A snapshot the app has not applied yet is replaced by the
next one (its events carried over): an app that falls behind never queues a backlog of them.

With many running jobs (PARTIAL_FROM) a tick re-reads only the rows on screen (``on_screen``,
set by the app) and the selected job, and keeps the other rows of the last full list: every row
is read again when a job folder appears or goes, when ``events.jsonl`` grows (every start, exit,
wait for input), and at least every FULL_EVERY seconds (a supervisor killed with -9 leaves no
event). Off-screen CPU/RSS/QUIET figures are then up to FULL_EVERY seconds old.

Nothing here touches Textual widgets: the thread only calls ``post_message`` (thread-safe).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from textual.message import Message

from hermes_procs.core.registry.interface import HostsView, Registry, Result, Rows
from hermes_procs.core.registry.model import JobInfo, parse_time
from hermes_procs.core.supervisor.text import safe_line, safe_text

from .trends import Trend, TrendRecorder

__all__ = ["JobRow", "Sampler"]


# --- rows ---------------------------------------------------------------------------------

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
    label: str  # JobInfo.label: the one wording of a status ("exited 3", "killed", ...)
    exit_code: int | None
    started: float  # epoch seconds
    uptime: float | None  # seconds (run time so far, or total run time when exited); None: none to show
    cpu: float | None = None
    rss: int | None = None
    silence: float | None = None  # seconds since the last output (running jobs)
    waiting: bool = False
    output_bytes: int | None = None  # every byte of output so far (the sparklines' output rate)
    age: int = 0  # its place in registry.list() counted from the oldest job (0): a new job moves no row
    host: str = ""  # "" = this machine, else the remote host's label (core/remote/hosts.py)
    unreachable: bool = False  # its host cannot be reached now: the row is the last one known
    rerun_of: str = ""  # the job this one is a rerun of (registry.restart), else ""
    ports: tuple[int, ...] = ()  # the TCP ports its processes listen on
    port: int | None = None  # the port it was started with (spawn's port=N)
    lease: str = ""  # "leased": ends with its owner; "pinned": leased but kept; "" none
    stack: str = ""  # the stack the job belongs to (core/stacks/), else ""
    restarts: int = 0  # how often its stack restarted it
    member: bool = False  # shown under its stack's header row (tui/stack_view.py)

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
    hosts: list[dict[str, Any]] = field(default_factory=list)  # remote hosts' states
    trend: Trend | None = None  # the selected job's recent CPU, RSS and output rate (trends.py)
    stacks: list[dict[str, Any]] = field(default_factory=list)  # the stacks' states (core/stacks/api.py)


def _lease_word(lease: object) -> str:
    """JobRow.lease from a list row's `lease`."""
    if not isinstance(lease, dict):
        return ""
    return "pinned" if lease.get("pinned") else "leased"


class Sampler(threading.Thread):
    """Daemon thread: sample the registry, post :class:`Sampler.Snapshot` to ``target``."""

    class Snapshot(Message):
        """A new sample of every job (and the selected job's input history)."""

        def __init__(self, data: SnapshotData) -> None:
            super().__init__()
            self.data = data

        def can_replace(self, message: Message) -> bool:
            """A newer snapshot waiting behind this one supersedes it (an app that falls behind
            applies the latest sample, not a backlog of them); its events are carried over."""
            if not isinstance(message, Sampler.Snapshot):
                return False
            message.data.events[:0] = self.data.events
            return True

    WATCH_GAP = 0.05  # at most one change-triggered sample per this many seconds
    PARTIAL_FROM = 100  # running jobs from which a tick re-reads only the rows on screen
    FULL_EVERY = 10.0  # seconds: every row is re-read at least this often

    def __init__(
        self,
        registry: Registry,
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
        self._trends = TrendRecorder(interval)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._last_list: list[dict[str, Any]] | None = None
        self._last_stamp: tuple[int, ...] | None = None
        self._last_list_at = 0.0
        self._last_full_at = 0.0
        self._rows: dict[str, tuple[dict[str, Any], int, JobRow]] = {}  # id -> (list row, age, JobRow)
        self.on_screen: frozenset[str] = frozenset()  # ids of the rows the table shows (the app sets it)
        remotes = getattr(registry, "remotes", None)  # a HostSet's remote hosts (core/remote/hosts.py)
        self._remotes: dict = remotes if isinstance(remotes, dict) else {}

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
        delay = rest = 0.0
        while not self._stop.is_set():
            if rest:  # even a poke waits this long: a slow sample is not repeated back to back
                self._stop.wait(rest)
            if delay > rest:
                self._wake.wait(delay - rest)
            self._wake.clear()
            if self._stop.is_set():
                break
            data = self.sample()
            if self._stop.is_set():
                break
            self.target.post_message(self.Snapshot(data))
            # re-arm: ticks take at most ~10 % of a core, pokes (jobs starting and ending) ~25 %
            delay, rest = max(self.interval, data.elapsed * 10), data.elapsed * 3

    def _watch_home(self) -> None:
        """Sample as soon as a job appears, exits or goes (inotify, core/registry/watch.py), not only at
        the next tick; a burst of changes is one sample per WATCH_GAP seconds."""
        home = getattr(self.registry, "home", None)
        if home is None:
            return
        from hermes_procs.core.registry.watch import HomeWatch

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
            error = "listing jobs failed"
            if isinstance(jobs, dict):
                error = jobs.get("error", error)
            jobs = []
        rows = self._rows_of(jobs)
        trend = self._trends.add(next((r for r in rows if r.session_id == selected), None) if selected else None, now)
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
        stacks = self._stacks()
        hosts: list[dict[str, Any]] = []
        if self._remotes:
            try:
                hosts = cast("HostsView", self.registry).host_states()  # _remotes: a HostSet
            except Exception:
                pass
        return SnapshotData(
            hosts=hosts,
            jobs=rows,
            taken_at=now,
            elapsed=time.perf_counter() - t0,
            selected=selected,
            inputs=inputs,
            events=events,
            error=error,
            trend=trend,
            stacks=stacks,
        )

    def _stacks(self) -> list[dict[str, Any]]:
        """Every stack's state (a few small files: state.json and a lock probe per stack)."""
        try:
            got = self.registry.stacks()
        except Exception:  # the core must not take the dashboard down
            return []
        return [row for row in got if isinstance(row, dict)] if isinstance(got, list) else []

    def _list(self) -> Rows | Result:
        """``registry.list()``, skipped while nothing can have changed: no job was running at
        the last sample and the jobs folder (where a new job appears) and events.jsonl are
        untouched; only the rows on screen while nothing changed but hundreds of jobs run."""
        stamp = self._stamp()
        last = self._last_list
        unchanged = stamp is not None and not self._remotes and last is not None and stamp == self._last_stamp
        running = sum(j.get("status") == "running" for j in last) if unchanged and last else 0
        now = time.monotonic()
        if unchanged and last is not None and not running and now - self._last_list_at < 30:
            return last
        recent = now - self._last_full_at < self.FULL_EVERY
        if unchanged and last is not None and running >= self.PARTIAL_FROM and recent:
            return self._partial(last, now)
        jobs = self.registry.list()
        if not isinstance(jobs, list):  # an error dict: sample() shows it, the last list stays
            return jobs
        self._last_list, self._last_stamp, self._last_list_at = jobs, stamp, now
        self._last_full_at = now
        return jobs

    def _partial(self, last: list[dict[str, Any]], now: float) -> list[dict[str, Any]]:
        """The last full list with the rows on screen (and the selected one) read again."""
        ids = set(self.on_screen)
        if self.selected:
            ids.add(self.selected)
        fresh = self.registry.list(only=ids) if ids else []
        if not isinstance(fresh, list):
            return last
        by_id = {r.get("session_id"): r for r in fresh}
        jobs = [by_id.get(j.get("session_id"), j) for j in last]
        self._last_list, self._last_list_at = jobs, now
        return jobs

    def _stamp(self) -> tuple[int, ...] | None:
        """What changes when a job appears, goes, starts, exits or waits: the jobs folder's
        mtime and events.jsonl's size and mtime."""
        home = getattr(self.registry, "home", None)
        jobs_dir = getattr(self.registry, "jobs_dir", None)
        if jobs_dir is None:
            return None
        try:
            stamp = (os.stat(jobs_dir).st_mtime_ns,)
        except OSError:
            return None
        try:
            st = os.stat(os.path.join(str(home), "events.jsonl"))
            return (*stamp, st.st_size, st.st_mtime_ns)
        except OSError:
            return stamp

    def _rows_of(self, jobs: list[dict[str, Any]]) -> list[JobRow]:
        """JobRows of the list rows (newest first); a row dict equal to the one of the last
        sample, at the same age, keeps its JobRow: a job that starts among hundreds builds one
        row, not hundreds (~50 us each)."""
        kept, out = self._rows, []
        self._rows = {}
        for index, job in enumerate(jobs):
            age, sid = len(jobs) - 1 - index, job.get("session_id", "")
            hit = kept.get(sid)
            if hit is not None and hit[1] == age and (hit[0] is job or hit[0] == job):
                row = hit[2]
            else:
                row = self._row(job, age)
            self._rows[sid] = (job, age, row)
            out.append(row)
        return out

    @staticmethod
    def _row(job: dict[str, Any], age: int = 0) -> JobRow:
        """The row of a list row; the text a job controls (name, command, cwd) through the one
        sanitiser, so no widget, toast, dialog or copy shows its escapes raw."""
        running = job.get("status") == "running"
        unreachable = job.get("host_state") in ("unreachable", "down")  # down: a stopped container
        return JobRow(
            session_id=job.get("session_id", ""),
            name=safe_line(job.get("name") or ""),
            command=safe_text(job.get("command") or ""),
            cwd=safe_line(job.get("cwd") or ""),
            pid=job.get("pid"),
            pty=bool(job.get("pty")),
            status="running" if running else "exited",
            label="unreachable" if unreachable and running else JobInfo.from_dict(job).label(),
            exit_code=job.get("exit_code"),
            started=parse_time(job.get("started_at")),
            uptime=float(job.get("uptime_seconds") or 0.0),
            cpu=job.get("cpu_percent") if running else None,
            rss=job.get("rss_bytes") if running else None,
            silence=job.get("quiet_seconds") if running else None,
            waiting=bool(job.get("awaiting_input")) and running,
            output_bytes=job.get("output_bytes"),
            age=age,
            host=job.get("host") or "",
            unreachable=unreachable,
            rerun_of=job.get("rerun_of") or "",
            stack=safe_line(job.get("stack") or ""),
            restarts=int(job.get("restarts") or 0),
            ports=tuple(p for p in job.get("ports") or () if isinstance(p, int)) if running else (),
            port=job.get("port") if isinstance(job.get("port"), int) else None,
            lease=_lease_word(job.get("lease")),
        )
