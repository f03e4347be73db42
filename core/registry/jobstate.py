"""A job's state as read from its folder: meta, process, exit, and whether it still runs.

A job runs while its supervisor does and no exit is recorded; a job whose supervisor is gone
but whose process still runs (same pid and start ticks) runs `unsupervised` until it ends; a
job whose supervisor vanished without recording an exit is `lost`, with no exit code: only the
supervisor, the process's parent, can know it (the first look that finds it lost notes when it
was last seen and tells the event log: core/registry/lostjobs.py).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ..supervisor import proctree
from . import lostjobs
from .model import iso_time, parse_time
from .paths import read_json


class CorruptJob(Exception):
    """A job folder whose files cannot be read as they should be."""


class Job:
    """One job folder as read from disk: its meta, proc and exit records and whether its
    supervisor still runs (a plain class, not a dataclass: see model.py's note on imports)."""

    __slots__ = ("dir", "exit", "extra", "meta", "proc", "session_id", "supervisor_alive", "unsupervised")

    def __init__(self, session_id: str, dir: Path, meta: dict[str, Any], proc: dict[str, Any] | None,
                 exit: dict[str, Any] | None, supervisor_alive: bool = False,
                 unsupervised: bool = False, extra: dict[str, Any] | None = None) -> None:
        self.session_id = session_id
        self.dir = dir
        self.meta = meta
        self.proc = proc
        self.exit = exit
        self.supervisor_alive = supervisor_alive
        self.unsupervised = unsupervised  # the supervisor is gone, the job's process runs on
        self.extra: dict[str, Any] = {} if extra is None else extra

    def __repr__(self) -> str:
        return f"Job({self.session_id!r}, status={self.status!r})"

    @property
    def supervised(self) -> bool:
        """Running under a live supervisor: its socket serves input, signals, waits and kills."""
        return self.exit is None and self.supervisor_alive

    @property
    def running(self) -> bool:
        return self.supervised or self.unsupervised

    @property
    def status(self) -> str:
        return "running" if self.running else "exited"

    @property
    def pid(self) -> int | None:
        return self.proc.get("pid") if self.proc else None

    @property
    def started_at(self) -> float:
        """Epoch seconds: the supervisor's record, else when the job was made; 0 when neither
        is a time (a damaged file must not break a listing of every job)."""
        return parse_time((self.proc or {}).get("started_at")) or parse_time(self.meta.get("created_at"))

    @property
    def ended_at(self) -> float | None:
        """Epoch seconds of the recorded exit; None while running, or when it is not a time."""
        return None if self.running else parse_time(self.outcome.get("ended_at")) or None

    @property
    def outcome(self) -> dict[str, Any]:
        """The exit record; a job whose supervisor vanished without one is `lost`."""
        if self.exit is not None:
            return self.exit
        if self.running:
            return {}
        seen = self.extra.get("lost_at")
        return {"exit_code": None, "signal": None, "completion_reason": "lost",
                "ended_at": iso_time(seen) if seen else None}

    def uptime(self) -> float:
        return round(max(0.0, (self.ended_at or time.time()) - self.started_at), 3)

    def started_iso(self) -> str:
        return iso_time(self.started_at)

    @property
    def root(self) -> tuple[int, int] | None:
        """The job's direct child as (pid, start ticks), as recorded."""
        try:
            return int((self.proc or {})["pid"]), int((self.proc or {})["pid_start"])
        except (KeyError, TypeError, ValueError):
            return None

    @property
    def supervisor(self) -> tuple[int, int] | None:
        """The supervisor as (pid, start ticks), as recorded."""
        try:
            return int((self.proc or {})["supervisor_pid"]), int((self.proc or {})["supervisor_start"])
        except (KeyError, TypeError, ValueError):
            return None

    def tree(self) -> proctree.Tree:
        """Who belongs to the job (proctree's rule): its root, the live supervisor and what is
        below it, the leftovers the supervisor recorded as it left, the root's session."""
        known = dict(_recorded_members(self.dir))
        spare: tuple[int, ...] = ()
        if self.root:
            known[self.root[0]] = self.root[1]
        if self.supervisor_alive and self.supervisor:
            known[self.supervisor[0]] = self.supervisor[1]
            spare = (self.supervisor[0],)
        session, ticks = self.root or (None, None)
        return proctree.Tree(known, session=session, leader_ticks=ticks, spare=spare)

    def leftover_pids(self) -> list[int]:
        """Processes of the job still alive after its direct child exited."""
        if self.running or not self.proc:
            return []
        return sorted(self.tree().scan())


def load(jobdir: Path, seen: dict[str, Any] | None = None) -> Job:
    """Read a job folder; CorruptJob when its files are damaged.

    `seen`: a dict the caller keeps for this job folder between loads; meta.json and proc.json
    are written once (atomically), so once read they are taken from it."""
    seen = {} if seen is None else seen
    meta = seen["meta"] if "meta" in seen else _read(jobdir, "meta.json")
    proc = seen["proc"] if "proc" in seen else _read(jobdir, "proc.json")
    exit_ = _read(jobdir, "exit.json")
    if meta is None:
        raise CorruptJob(f"damaged job folder {jobdir.name}: meta.json is missing")
    if not isinstance(meta.get("command"), str):
        raise CorruptJob(f"damaged job folder {jobdir.name}: meta.json has no command")
    seen["meta"] = meta
    if proc is not None:
        seen["proc"] = proc
    job = Job(jobdir.name, jobdir, meta, proc, exit_)
    _look_at_supervisor(job, seen)
    return job


def _look_at_supervisor(job: Job, seen: dict[str, Any]) -> None:
    """Set job.supervisor_alive; for a job without an exit record whose supervisor is gone, read
    the record again (written just before it exited?) and else whether the job runs unsupervised."""
    if job.exit is None and job.proc:
        job.supervisor_alive = _supervisor_alive(job.proc, job)
        if not job.supervisor_alive:  # it may have written its record just before exiting
            job.exit = _reread_exit(job.dir)
        if job.exit is None and not job.supervisor_alive and job.root:
            job.unsupervised = proctree.is_alive(*job.root)
        if job.exit is None and not job.supervisor_alive and not job.unsupervised:
            if seen.get("lost_at") is None:  # noted once; a list's later looks take it from `seen`
                seen["lost_at"] = lostjobs.note(job.dir, job.meta, job.proc)
            job.extra["lost_at"] = seen["lost_at"]
    elif job.exit is None and job.proc is None:  # not started yet, or its start failed
        job.supervisor_alive = time.time() - float(job.meta.get("created_at", 0)) < 10
    elif job.proc:
        job.supervisor_alive = _supervisor_alive(job.proc)


def _read(jobdir: Path, name: str) -> dict[str, Any] | None:
    try:
        return read_json(f"{jobdir}/{name}")  # not os.path.join: list() calls this 3,000 times
    except (ValueError, OSError) as exc:
        raise CorruptJob(f"damaged job folder {jobdir.name}: {name} is unreadable ({exc})") from exc


def _supervisor_alive(proc: dict[str, Any], job: Job | None = None) -> bool:
    """Whether the recorded supervisor runs; its /proc stat fields go to job.extra["supervisor_stat"]
    (the list's figures need them too: one read instead of two)."""
    try:
        pid, ticks = int(proc["supervisor_pid"]), int(proc["supervisor_start"])
    except (KeyError, TypeError, ValueError):
        return False
    fields = proctree.stat_fields(pid)
    if not fields or int(fields[19]) != ticks or fields[0] in ("Z", "X"):
        return False
    if job is not None:
        job.extra["supervisor_stat"] = fields
    return True


def _recorded_members(jobdir: Path) -> list[tuple[int, int]]:
    """(pid, start ticks) of the processes the supervisor left running (members.json)."""
    try:
        data = read_json(jobdir / "members.json") or {}
        return [(int(pid), int(ticks)) for pid, ticks in data.get("members", [])]
    except (ValueError, OSError, TypeError, AttributeError):
        return []


def _reread_exit(jobdir: Path) -> dict[str, Any] | None:
    try:
        return read_json(jobdir / "exit.json")
    except ValueError:
        return None
