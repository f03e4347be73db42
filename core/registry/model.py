"""The job model every client shares: status and outcome, their wording, times and signals.

The Python API, the tool and the MCP server speak JSON-able dicts (the contract). Clients (the
CLI, the dashboard, the Hermes adapter) turn such a dict into a typed `JobInfo` once, with
`JobInfo.from_dict`, and ask it questions instead of reading string keys: this module is the one
place where "exited 3", "killed", "timed out" and "lost" are worded, where an outcome becomes a
shell exit status (128+N for signal N), where ISO timestamps are parsed back to epoch seconds and
where signal names are checked.

Standard library only, and nothing else from the package: it is cheap to import (NamedTuple,
not dataclasses: `dataclasses` loads `inspect`, a fifth of a one-shot CLI query's imports;
`datetime` loads only to parse an ISO string, ~2.5 ms a CLI query does not need).
"""

from __future__ import annotations

import functools
import signal as _signal
import time
from enum import Enum
from typing import Any, NamedTuple

from ..supervisor.bounds import EARLIEST, LATEST

__all__ = ["SENDABLE_SIGNALS", "JobInfo", "Outcome", "Signal", "Status", "parse_time", "shell_exit_code"]


class StrEnum(str, Enum):
    """`enum.StrEnum` for Python 3.9 (this module is also sent to remote hosts, which may be
    that old): members are their values, in str() and in f-strings."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class Status(StrEnum):
    """A job's `status` in list/poll results."""

    RUNNING = "running"
    EXITED = "exited"
    CORRUPT = "corrupt"  # a damaged job folder (list only)

    @classmethod
    def parse(cls, value: object) -> Status | None:
        """The member for `value`, or None for anything else (an error status, a typo)."""
        try:
            return cls(str(value))
        except ValueError:
            return None


class Outcome(StrEnum):
    """How a job ended: its `completion_reason`."""

    EXITED = "exited"  # the command ended by itself (any exit code)
    KILLED = "killed"  # kill() or a signal ended it
    TIMED_OUT = "timed_out"  # max_runtime passed and its tree was killed
    LOST = "lost"  # its supervisor vanished without writing an exit record

    @property
    def word(self) -> str:
        """The outcome as people read it: ``timed out``."""
        return self.value.replace("_", " ")

    @classmethod
    def parse(cls, value: object) -> Outcome | None:
        """The member for `value`; None when absent; unknown words count as `exited`."""
        if value is None or value == "":
            return None
        try:
            return cls(str(value))
        except ValueError:
            return cls.EXITED


# The signals the API lets a caller send (registry.signal), with what each is for.
SENDABLE_SIGNALS: dict[str, str] = {
    "INT": "interrupt (like Ctrl-C)",
    "TERM": "terminate politely",
    "HUP": "hang up / reload",
    "KILL": "kill at once (cannot be caught)",
    "QUIT": "quit with a core dump (like Ctrl-\\)",
    "USR1": "user-defined 1",
    "USR2": "user-defined 2",
    "STOP": "pause (cannot be caught)",
    "CONT": "resume after STOP",
    "WINCH": "terminal size changed",
}


class Signal(NamedTuple):
    """A signal by its short name (``TERM``) and number (15)."""

    name: str
    number: int

    @classmethod
    def parse(cls, value: object, *, sendable_only: bool = True) -> Signal:
        """``TERM``, ``SIGTERM``, ``sigterm``, ``15`` or 15 -> Signal("TERM", 15).

        Raises ValueError with a one-line message for anything else, and (by default) for a
        signal the API does not send (see SENDABLE_SIGNALS)."""
        text = str(value).strip().upper()
        try:
            sig = _signal.Signals(int(text)) if text.isdigit() else _signal.Signals["SIG" + text.removeprefix("SIG")]
        except (KeyError, ValueError):
            raise ValueError(f"unknown signal {value!r}; use one of {', '.join(SENDABLE_SIGNALS)}") from None
        name = sig.name.removeprefix("SIG")
        if sendable_only and name not in SENDABLE_SIGNALS:
            raise ValueError(f"signal {value!r} cannot be sent; use one of {', '.join(SENDABLE_SIGNALS)}")
        return cls(name, int(sig))

    @property
    def full_name(self) -> str:
        """``SIGTERM``."""
        return "SIG" + self.name


def shell_exit_code(exit_code: object) -> int:
    """A job's exit code as a shell exit status: -N (ended by signal N) -> 128+N; 1 when unknown."""
    if isinstance(exit_code, bool) or not isinstance(exit_code, int):
        return 1
    return 128 - exit_code if exit_code < 0 else exit_code & 0xFF


def parse_time(value: object, default: float = 0.0) -> float:
    """Epoch seconds from an epoch number or an ISO 8601 string (``Z`` allowed) of a time from
    year 1 to 9999; else default."""
    if isinstance(value, bool):
        return default
    if isinstance(value, (int, float)):
        return float(value) if EARLIEST <= value <= LATEST else default  # NaN fails the test too
    if isinstance(value, str) and 0 < len(value) <= 64:  # no ISO 8601 time is longer
        seconds = _iso_seconds(value, time.tzname)  # a time without an offset is local time
        return default if seconds is None else seconds
    return default


@functools.lru_cache(maxsize=4096)  # the dashboard reads every row's time at every sample
def _iso_seconds(text: str, zone: tuple[str, str]) -> float | None:
    """`text` as epoch seconds, or None; `zone` (time.tzname) is there for the cache's key."""
    text = text.replace("Z", "+00:00")
    seconds = _utc_seconds(text)
    if seconds is not None:
        return seconds
    from datetime import datetime  # any other form: ~3 ms of a CLI query's start

    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


_MONTH_DAYS = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_MONTH_STARTS = (0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334)  # in a year without Feb 29


def _leap_days_before(year: int) -> int:
    """Feb 29ths from year 1 to the end of year - 1 (the Gregorian calendar)."""
    return (year - 1) // 4 - (year - 1) // 100 + (year - 1) // 400


def _utc_seconds(text: str) -> float | None:
    """`iso_time`'s own form, ``YYYY-MM-DDTHH:MM:SS+00:00``, as epoch seconds without loading
    `datetime` (what `hermes-procs ls` reads for every row); None for any other text."""
    if len(text) != 25 or text[19:] != "+00:00" or (text[4], text[7], text[10], text[13], text[16]) != tuple("--T::"):
        return None
    fields = (text[:4], text[5:7], text[8:10], text[11:13], text[14:16], text[17:19])
    if not all(field.isascii() and field.isdigit() for field in fields):
        return None
    year, month, day, hour, minute, second = map(int, fields)
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    if not (year >= 1 and 1 <= month <= 12 and 1 <= day <= _MONTH_DAYS[month - 1] + (leap and month == 2)
            and hour < 24 and minute < 60 and second < 60):
        return None
    days = ((year - 1970) * 365 + _leap_days_before(year) - _leap_days_before(1970)
            + _MONTH_STARTS[month - 1] + (leap and month > 2) + day - 1)
    return float(days * 86400 + hour * 3600 + minute * 60 + second)


def iso_time(epoch: float) -> str:
    """Epoch seconds -> ISO 8601 in UTC, whole seconds (the API's `started_at`)."""
    t = time.gmtime(epoch)  # not strftime's %Y: it does not pad a year before 1000
    return f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}+00:00"


def _opt_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _lease_word(lease: object) -> str:
    """JobInfo.lease of a result's `lease` ({"pid", "pinned", "owner_alive"} or None)."""
    if not isinstance(lease, dict):
        return ""
    return "kept" if lease.get("pinned") else "leased"


class JobInfo(NamedTuple):
    """One job as a client sees it, typed; built from an API result with `from_dict`.

    `status` is the raw status word (it may be an API status such as ``not_found``);
    `state` is the same as a Status member, or None for anything else."""

    session_id: str
    status: str
    command: str = ""
    name: str = ""
    cwd: str = ""
    pid: int | None = None
    pty: bool = False
    started: float = 0.0  # epoch seconds (0: unknown)
    uptime: float | None = None  # seconds run so far, or in all once it ended
    outcome: Outcome | None = None
    exit_code: int | None = None
    signal: str | None = None  # "SIGTERM" when a signal ended it
    output_preview: str = ""
    task_id: str = ""
    session_key: str = ""
    error: str = ""
    ports: tuple[int, ...] = ()  # the TCP ports its processes listen on
    awaiting_input: bool = False  # it seems to wait for input (the dashboard's `?`)
    stopped: bool = False  # running, but its process is stopped (SIGSTOP, Ctrl-Z): `stopped`
    lease: str = ""  # "leased": it ends with its owner; "kept": leased but pinned; "": no lease

    @classmethod
    def from_dict(cls, data: dict[str, Any], session_id: str = "") -> JobInfo:
        """From a list row or a poll/wait/kill result (missing keys get their defaults)."""
        uptime = data.get("uptime_seconds")
        return cls(
            session_id=str(data.get("session_id") or session_id),
            status=str(data.get("status") or "unknown"),
            command=str(data.get("command") or ""),
            name=str(data.get("name") or ""),
            cwd=str(data.get("cwd") or ""),
            pid=_opt_int(data.get("pid")),
            pty=bool(data.get("pty")),
            started=parse_time(data.get("started_at")),
            uptime=float(uptime) if isinstance(uptime, (int, float)) and not isinstance(uptime, bool) else None,
            outcome=Outcome.parse(data.get("completion_reason")),
            exit_code=_opt_int(data.get("exit_code")),
            signal=data.get("signal") or None,
            output_preview=str(data.get("output_preview") or ""),
            task_id=str(data.get("task_id") or ""),
            session_key=str(data.get("session_key") or ""),
            error=str(data.get("error") or ""),
            ports=tuple(p for p in data.get("ports") or () if isinstance(p, int) and not isinstance(p, bool)),
            awaiting_input=data.get("awaiting_input") is True,
            stopped=data.get("stopped") is True,
            lease=_lease_word(data.get("lease")),
        )

    @property
    def state(self) -> Status | None:
        return Status.parse(self.status)

    @property
    def running(self) -> bool:
        return self.status == Status.RUNNING

    @property
    def ended(self) -> bool:
        """It has finished (exited, killed, timed out or lost); also true for `already_exited`."""
        return self.status in (Status.EXITED, "already_exited", "killed")

    @property
    def failed(self) -> bool:
        """Ended other than by exiting with code 0."""
        clean_exit = (self.outcome or Outcome.EXITED) is Outcome.EXITED and self.exit_code in (0, None)
        return self.ended and not clean_exit

    def label(self) -> str:
        """The status in a word or two: ``running``, ``stopped`` (running, its process stopped),
        ``exited 3``, ``ended by SIGSEGV``, ``killed``, ``timed out``, ``lost`` (an error or
        unknown status is shown as it is)."""
        if not self.ended:
            return "stopped" if self.running and self.stopped else self.status
        outcome = self.outcome or Outcome.EXITED
        if outcome is Outcome.EXITED:
            return self._signal_death() or (f"exited {self.exit_code}" if self.exit_code is not None else "exited")
        return outcome.word

    def _signal_death(self) -> str:
        """``ended by SIGSEGV`` when a signal nobody sent through us ended the command itself
        (exit code -N); empty otherwise."""
        if self.exit_code is None or self.exit_code >= 0:
            return ""
        if self.signal:
            return f"ended by {self.signal}"
        try:
            return f"ended by {Signal.parse(-self.exit_code, sendable_only=False).full_name}"
        except ValueError:
            return f"ended by signal {-self.exit_code}"

    def ended_phrase(self) -> str:
        """How it ended, as a phrase after its name: ``exited with code 3``, ``killed (SIGTERM)``,
        ``timed out (SIGTERM)``, ``lost (its supervisor vanished)``."""
        outcome = self.outcome or Outcome.EXITED
        if outcome is Outcome.EXITED:
            code = f"exited with code {self.exit_code}" if self.exit_code is not None else "exited"
            return self._signal_death() or code
        if outcome is Outcome.LOST:
            return "lost (its supervisor vanished)"
        return f"{outcome.word} ({self.signal})" if self.signal else outcome.word

    def detail(self) -> str:
        """The outcome in brackets after "has already exited": ``exit code 3``, ``killed, SIGTERM``,
        ``lost``; empty when nothing is known."""
        outcome = self.outcome or Outcome.EXITED
        if outcome is Outcome.EXITED:
            return self._signal_death() or (f"exit code {self.exit_code}" if self.exit_code is not None else "")
        return f"{outcome.word}, {self.signal}" if self.signal else outcome.word

    def already_exited(self, verb: str = "has") -> str:
        """``proc_x has already exited (exit code 3)``: why a live operation was refused."""
        detail = self.detail()
        return f"{self.session_id} {verb} already exited" + (f" ({detail})" if detail else "")

    def shell_exit_code(self) -> int:
        """The exit status a shell would report for it (128+N when ended by signal N)."""
        return shell_exit_code(self.exit_code)

    def age(self, now: float | None = None) -> float:
        """Seconds since it started (0 when unknown)."""
        return max(0.0, (time.time() if now is None else now) - self.started) if self.started else 0.0
