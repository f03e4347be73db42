"""`wait(id, until=...)`: what a wait can wait for, and the check that says it happened.

    exit            the job's command exits (the default; the supervisor tells us at once)
    input           a process of the job is blocked reading its stdin or terminal
    quiet:SECONDS   the job has printed nothing for SECONDS
    output:REGEX    output printed after the call matches REGEX (ANSI stripped; a prompt
                    without a newline counts; ^ and $ match at line ends); the pattern runs
                    in RE2 or in a worker process with a deadline (core/registry/userregex.py): one
                    that takes too long ends the wait with an error
    port:N          a process of the job listens on TCP port N
    port            ... on the port the job was started with (spawn(port=N))

:func:`parse` validates the text; :func:`checker` returns a function the registry calls every
POLL_STEP seconds while it waits on the supervisor's socket for the exit. The checker returns
None until the condition holds, then the fields to add to the result (``reason`` and, for
output, ``matched``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from ..supervisor import stats
from ..supervisor.text import to_text
from . import logstore
from .jobstate import Job
from .userregex import PatternError, UserRegex, compile_user

POLL_STEP = 0.05  # seconds between checks of a condition
CHUNK = 1 << 20  # output read per step of an output:REGEX wait
MAX_CHUNKS = 16  # per check; a flood is caught up over several checks, never skipped
CARRY = 64 << 10  # bytes of an unfinished line kept for the next check
KINDS = ("exit", "input", "quiet:SECONDS", "output:REGEX", "port:N", "port")


class UntilError(ValueError):
    """A malformed `until`; the message says what is accepted."""


class Until(NamedTuple):
    kind: str  # exit, input, quiet, output, port
    seconds: float = 0.0
    pattern: UserRegex | None = None
    port: int = 0  # 0: the job's own (spawn's port=N)


def parse(until: object) -> Until:
    """`until` text -> Until, or UntilError naming the accepted forms."""
    if until is None:
        return Until("exit")
    if not isinstance(until, str):
        raise UntilError(f"until must be a string, one of {', '.join(KINDS)}; not {until!r}")
    kind, sep, arg = until.partition(":")
    kind = kind.strip().lower()
    if kind in ("exit", "input", "port") and not sep:
        return Until(kind)
    if kind in _WITH_ARGUMENT and sep:
        return _WITH_ARGUMENT[kind](arg)
    raise UntilError(f"unknown until {until!r}; use one of {', '.join(KINDS)}")


def _quiet(arg: str) -> Until:
    try:
        seconds = float(arg)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        raise UntilError(f"until='quiet:SECONDS' needs a positive number of seconds, not {arg!r}")
    return Until("quiet", seconds=seconds)


def _output(arg: str) -> Until:
    if not arg:
        raise UntilError("until='output:REGEX' needs a regular expression after 'output:'")
    try:
        return Until("output", pattern=compile_user(arg, what="until='output:REGEX':"))
    except PatternError as exc:
        raise UntilError(str(exc)) from None


def _port(arg: str) -> Until:
    if not arg.strip().isdigit() or not 0 < int(arg) < 65536:
        raise UntilError(f"until='port:N' needs a TCP port from 1 to 65535, not {arg!r}")
    return Until("port", port=int(arg))


# the kinds written KIND:ARGUMENT, and the parser of each one's argument
_WITH_ARGUMENT: dict[str, Callable[[str], Until]] = {"quiet": _quiet, "output": _output, "port": _port}


def checker(until: Until, job: Job, baseline: dict[int, int | None] | None = None,
            ) -> Callable[[], dict[str, Any] | None] | None:
    """The check for a running job (None for `exit`: the socket wait alone does it). Raises
    UntilError for `port` when the job was started without one. `baseline` (for `input`): the
    job's processes and how often each had blocked before an input was sent (:func:`blocked_counts`);
    only a read begun since then counts (a write's yield: the job took the input and waits again)."""
    if until.kind == "exit":
        return None
    if until.kind == "output" and until.pattern is not None:
        return _OutputCheck(job.dir, until.pattern).check
    if until.kind == "quiet":
        log = str(job.dir / logstore.LOG_NAME)
        return lambda: ({"reason": "quiet"} if stats.quiet_seconds(log, job.started_at) >= until.seconds
                        else None)
    supervisor = (job.proc or {}).get("supervisor_pid")

    def tree() -> list[int]:
        return stats.job_tree(supervisor, job.pid)

    if until.kind == "input":
        return _InputCheck(tree, job.pid, baseline).check
    port = until.port or job.meta.get("port")
    if not isinstance(port, int) or isinstance(port, bool) or not port:
        raise UntilError(f"until='port' waits for the port {job.session_id} was started with, and it was started "
                         "without one: use until='port:N'")
    return lambda: {"reason": "port_open", "port": port} if stats.listens_on(tree(), port) else None


def blocked_counts(job: Job) -> dict[int, int | None]:
    """The job's processes now, each with how often it has blocked so far (the `baseline` of
    an input check: a process reading with another count has gone back to reading since)."""
    supervisor = (job.proc or {}).get("supervisor_pid")
    return {pid: stats.voluntary_switches(pid) for pid in stats.job_tree(supervisor, job.pid)}


class _InputCheck:
    """Blocked reading stdin at two checks in a row: by then the supervisor has logged the
    prompt the job printed before reading (and a passing read does not count). With a
    `baseline`, only a read begun after it counts, the same read at both checks."""

    def __init__(self, tree: Callable[[], list[int]], root: int | None,
                 baseline: dict[int, int | None] | None = None) -> None:
        self.tree, self.root, self.baseline = tree, root, baseline
        self.seen: object = None

    def check(self) -> dict[str, Any] | None:
        # the root's stdin is read each time: right after the fork it is not yet the job's
        stdin = stats.fd_target(self.root, 0) if self.root else None
        if self.baseline is None:
            waiting: object = stats.waiting_for_input(self.tree(), stdin) or None
        else:
            reads = {(pid, stats.voluntary_switches(pid)) for pid in stats.input_readers(self.tree(), stdin)}
            waiting = frozenset((pid, n) for pid, n in reads
                                if pid not in self.baseline or n != self.baseline[pid]) or None
        met, self.seen = waiting is not None and waiting == self.seen, waiting
        return {"reason": "awaiting_input"} if met else None


class _OutputCheck:
    """Searches the output written since it was made; a line still being written is searched
    again with what follows it, so a prompt with no newline matches."""

    def __init__(self, jobdir: Path, pattern: UserRegex) -> None:
        self.jobdir = jobdir
        self.pattern = pattern
        self.offset = logstore.total_bytes(jobdir)
        self.carry = b""

    def check(self) -> dict[str, Any] | None:
        for _ in range(MAX_CHUNKS):
            data = logstore.read_bytes(self.jobdir, self.offset, self.offset + CHUNK)
            if not data:
                return None
            self.offset += len(data)
            data = self.carry + data
            cut = data.rfind(b"\n") + 1
            self.carry = data[cut:][-CARRY:]
            match = self.pattern.first(to_text(data))
            if match is not None:
                return {"reason": "matched", "matched": match[:1000]}
        return None
