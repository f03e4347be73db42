"""What every verb family of `ProcessRegistry` stands on: the state it keeps, finding a job by
its id, asking its supervisor (`_live`), and `_safe`, which turns every failure into the
contract's error dict (docs/api.md: bad input never raises).

The families (spawn.py, observe.py, wait.py, control.py, consumers.py, housekeeping.py) are
mixins of `RegistryBase`; process_registry.py puts them together. Each family calls the others
only through the `Registry` interface (interface.py) or the helpers here, so mypy checks every
one of them against the whole.
"""

from __future__ import annotations

import functools
import os
from _thread import allocate_lock  # threading's Lock; `threading` costs a CLI query ~1.5 ms
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..supervisor import stats, text
from ..supervisor.bounds import MAX_SECONDS, BadNumber
from . import events, logstore, processes, protocol
from .envnumbers import env_number
from .interface import Registry
from .jobstate import CorruptJob, Job, load
from .paths import HomeError, IdError, ensure_private_dir, resolve_home, resolve_id
from .userregex import PatternError

if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable
    from typing import ParamSpec, TypeVar  # novermin (3.10: read by the type checker only)

    P = ParamSpec("P")
    R = TypeVar("R")

MAX_WRITE = 1 << 20
MAX_LOG_BYTES = 4 << 20
UNSUPERVISED = ("the supervisor of {job} is gone; its process runs on unsupervised (output is no longer "
                "recorded and input cannot reach it; kill, signal and wait still work)")


# `STACK/JOB` -> the id of that stack's job (IdError when there is none): set with the stack
# calls (registry/stacking.py), so that this room never imports core/stacks/
named_job: Callable[[Path, str], str] | None = None


class BadInput(Exception):
    """Bad input from the caller: becomes {"status": "error", "error": message}."""


def _safe(method: Callable[P, R]) -> Callable[P, R | dict[str, Any]]:
    """Turn every failure into the contract's error dict instead of an exception (so a method
    returning a list returns a dict on failure)."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R | dict[str, Any]:
        try:
            return method(*args, **kwargs)
        except IdError as exc:
            status, error = exc.status, str(exc)
        except (BadInput, BadNumber, CorruptJob, HomeError, PatternError, protocol.NewerSupervisor,
                events.CursorError) as exc:
            status, error = "error", str(exc)
        except OSError as exc:  # a read-only home, a full disk: what and where, not the class
            status, error = "error", (f"{exc.strerror}: {exc.filename}" if exc.strerror and exc.filename
                                      else exc.strerror or f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # noqa: BLE001 - the contract: bad input never raises
            status, error = "error", f"{type(exc).__name__}: {exc}"
        return {"status": status, "error": text.one_line(error)}

    return wrapper


def _env_float(name: str, default: float, maximum: float = MAX_SECONDS) -> float:
    return env_number(name, default, 0.0, maximum)


class RegistryBase(Registry):
    """The state home's jobs: the state every verb family shares, and the lookups."""

    remote = False

    def __init__(self, home: str | os.PathLike[str] | None = None, host: str | None = None) -> None:
        """Raises paths.HomeError (a ValueError, one clear line) for a home that is unsafe to use."""
        self._home = ensure_private_dir(resolve_home(home))
        self.jobs_dir = ensure_private_dir(self._home / "jobs")
        self._supervisors: list[subprocess.Popen[bytes]] = []
        self._index: dict[str, dict[str, Any]] = {}  # finished jobs' list rows (listindex.py)
        self._index_key: tuple[int, int, int] | None = None
        self._index_lines = 0
        self._lock = allocate_lock()
        self._cpu = stats.CpuMeter()
        self._process_rows = processes.ProcessRows()
        self._seen: dict[str, dict[str, Any]] = {}  # running jobs' write-once files and log tail (_list_row)

    @property
    def home(self) -> Path:
        """The state home (a private folder: docs/internals.md "State home")."""
        return self._home

    # ---- lookup ------------------------------------------------------------------------
    def _resolve(self, session_id: object) -> str:
        """The full id named by `session_id`: an id, a unique prefix, or `STACK/JOB` (a stack's
        job, when core/stacks/ is plugged in: `named_job`). Raises IdError."""
        if isinstance(session_id, str) and "/" in session_id and named_job is not None:
            session_id = named_job(self.home, session_id.strip())
        return resolve_id(self.jobs_dir, session_id)

    def _job(self, session_id: str) -> Job:
        self._reap_supervisors()
        return load(self.jobs_dir / self._resolve(session_id))

    def job_dir(self, session_id: str) -> Path:
        """The job's folder. Raises IdError for a bad or unknown id (see docs/api.md)."""
        return self.jobs_dir / self._resolve(session_id)

    def log_files(self, session_id: str) -> list[Path]:
        """The job's retained output log segments, oldest first. Raises IdError for a bad id."""
        return logstore.segments(self.job_dir(session_id))

    def _reap_supervisors(self, new: subprocess.Popen[bytes] | None = None) -> None:
        """Collect supervisors (and templates) started here that have finished (our children,
        which would stay zombies): one waitpid(WNOHANG) each, on every call that looks a job up."""
        if self._supervisors or new is not None:
            with self._lock:
                self._supervisors = [p for p in self._supervisors if p.poll() is None]
                if new is not None:
                    self._supervisors.append(new)

    # ---- live operations ---------------------------------------------------------------
    def _live(self, job: Job, message: dict[str, Any], timeout: float | None = 10.0) -> dict[str, Any]:
        if job.unsupervised:
            return {"ok": False, "error": UNSUPERVISED.format(job=job.session_id)}
        try:
            return protocol.request(job.dir, message, timeout=timeout, retry_for=2.0, supervisor=job.supervisor)
        except protocol.SupervisorGone:
            return {"ok": False, "exited": True, "error": "the process has exited"}
        except protocol.SupervisorStuck as exc:
            return {"ok": False, "stuck": True, "error": str(exc)}

    def _already_exited(self, job: Job) -> dict[str, Any]:
        return {"status": "already_exited", "session_id": job.session_id, **_outcome_fields(job)}

    def _live_error(self, job: Job, reply: dict[str, Any]) -> dict[str, Any]:
        if reply.get("exited"):
            return self._already_exited(load(job.dir))
        return {"status": "error", "session_id": job.session_id, "error": reply.get("error", "failed")}

    def _tail_text(self, job: Job, chars: int) -> str:
        return text.last_chars(logstore.tail_bytes(job.dir, chars * 4 + 4096), chars)


# what asked for a kill (exit.json's `killed_by`): a client's kill(), the job's lease (its owner
# ended), max_runtime, a SIGTERM to its supervisor
KILLED_BY = ("kill", "lease", "max_runtime", "signal")


def _outcome_fields(job: Job) -> dict[str, Any]:
    outcome = job.outcome
    fields = {"exit_code": outcome.get("exit_code"), "completion_reason": outcome.get("completion_reason"),
              "signal": outcome.get("signal")}
    if outcome.get("killed_by") in KILLED_BY:
        fields["killed_by"] = outcome["killed_by"]
    return fields
