"""One job of a running stack as its supervisor tracks it (`Run`): its state, current session,
restart counts and what its dependents may rely on; the restart policy with its doubling,
capped backoff; and what a dependency's state means for a job waiting on it.

Job states:

    waiting     for its dependencies
    starting    started; its readiness probe has not passed yet
    ready       running (its probe passed, or it has none)
    exited      exited 0 and is not restarted (a migration, a build step)
    restarting  exited; starts again when its backoff has passed
    failed      exited non-zero (or could not start) and is not restarted
    unready     runs, but its probe timed out (its dependents are blocked)
    blocked     will not start: a dependency failed (the message says which and why)
    stopped     killed by someone (not by its policy), or by down
    off         not started automatically (mprocs autostart: false, process-compose disabled)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from .model import JobSpec

GOOD = ("ready", "exited")
DEAD = ("failed", "blocked", "off", "stopped")  # will not change by itself
MIN_BACKOFF = 0.1  # seconds: the least first delay of a restart policy
MAX_BACKOFF_FLOOR = 1.0  # seconds: a crash loop doubles its delay up to at least this
MAX_MESSAGE = 500  # characters of a job's message kept in the stack's state
RESET_AFTER = 10.0  # seconds: a run that lasted longer than this (and backoff_max) resets the doubling


@dataclass
class Run:
    name: str
    state: str = "waiting"
    session_id: str | None = None
    restarts: int = 0  # every start after the first: by policy, by watch, by request
    policy_restarts: int = 0  # the ones max_restarts counts
    crashes: int = 0  # exits in a row that each came soon after the start (for the backoff)
    message: str = ""
    why: str = ""  # why the current run was started again ("restarted: app.py changed"), kept while it runs
    exit_code: int | None = None
    started: bool = False  # has run at least once
    ready: bool = False  # has been ready at least once
    completed: bool = False  # has exited at least once
    succeeded: bool = False  # has exited 0 at least once
    started_at: float = 0.0  # wall clock of the current run's start
    next_start: float = 0.0  # wall clock of a pending restart
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("extra")
        data["message"] = str(data["message"])[:MAX_MESSAGE]  # the state of many jobs stays small
        return data

    @classmethod
    def from_dict(cls, name: str, data: object) -> Run:
        run = cls(name)
        if isinstance(data, dict):
            for key, value in data.items():
                if key in run.__dataclass_fields__ and key not in ("name", "extra"):
                    setattr(run, key, value)
        return run

    def reset(self) -> None:
        """Forget every run (a whole-stack restart): the job waits for its dependencies again."""
        self.__init__(self.name)  # type: ignore[misc]


def dependency_verdict(condition: str, dep: Run) -> str | None:
    """None: satisfied; "wait": not yet; else why the dependent cannot start."""
    satisfied = {"started": dep.started, "ready": dep.ready, "completed": dep.completed,
                 "completed_successfully": dep.succeeded}[condition]
    if satisfied:
        return None
    if dep.state == "off":
        return f"{dep.name} is not started automatically"
    if dep.state == "blocked":  # its own row says by what: a chain of 200 nested its messages
        return f"{dep.name} is blocked"
    if dep.state in DEAD or (dep.state == "unready" and condition == "ready"):
        return f"{dep.name} {dep.message or dep.state}"
    if condition == "completed_successfully" and dep.state == "exited":
        return f"{dep.name} did not complete successfully"
    return "wait"


def after_exit(job: JobSpec, run: Run, code: int | None, reason: str, now: float, what: str = "", *,
               stack: str) -> None:
    """Apply the job's restart policy to a run that ended (`reason`: the registry's
    completion_reason, or "start_failed" with `what` saying why; "killed" is someone's kill,
    never restarted; `stack`: the stack's name, for the command that restarts it)."""
    run.completed = run.completed or reason != "start_failed"
    run.exit_code = code
    run.succeeded = run.succeeded or code == 0
    what = what or _ending(code, reason)
    if reason == "killed":
        run.state, run.message = "stopped", f"{what} (restart it with: hermes-procs restart {stack} {job.name})"
        return
    wanted = job.restart == "always" or (job.restart == "on-failure" and code != 0)
    if not wanted:
        run.state, run.message = ("exited", what) if code == 0 else ("failed", what)
        return
    if job.max_restarts is not None and run.policy_restarts >= job.max_restarts:
        times = run.policy_restarts
        run.state, run.message = "failed", f"{what}; gave up after {times} restart{'s' * (times != 1)}"
        return
    lasted = now - run.started_at if run.started_at else 0.0
    run.crashes = 1 if lasted > max(RESET_AFTER, job.backoff_max) else run.crashes + 1
    delay = backoff_delay(job, run.crashes)
    run.state, run.next_start = "restarting", now + delay
    run.why = f"restarted ({what})"
    limit = f" of {job.max_restarts}" if job.max_restarts is not None else ""
    run.message = f"{what}; restart {run.policy_restarts + 1}{limit} in {delay:g}s"


def backoff_delay(job: JobSpec, crashes: int) -> float:
    """backoff, 2 x backoff, 4 x backoff, ... capped at backoff_max (crashes counts from 1); a
    crash loop waits at least MIN_BACKOFF, doubling up to at least MAX_BACKOFF_FLOOR (backoff = 0
    with backoff_max = 0 restarted a job that exits at once 56 times a second)."""
    first = max(job.backoff, MIN_BACKOFF)
    cap = max(job.backoff_max, job.backoff, MAX_BACKOFF_FLOOR)
    return float(min(first * (2 ** max(0, min(crashes, 60) - 1)), cap))


def _ending(code: int | None, reason: str) -> str:
    if reason == "killed":
        return "killed"
    if reason == "lost":
        return "lost (its supervisor died)"
    if reason == "timed_out":
        return "timed out"
    if code is not None and code < 0:
        return f"killed by signal {-code}"
    return f"exited {code}"

