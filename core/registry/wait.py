"""Waiting: `wait` (for an exit, or an `until` condition: wait_until.py) and `wait_any`."""

from __future__ import annotations

import builtins
import math
import os
import select
import time
from typing import TYPE_CHECKING, Any

from ..supervisor import proctree
from ..supervisor.bounds import seconds
from . import protocol, wait_until
from .base import BadInput, RegistryBase, _env_float, _outcome_fields, _safe
from .interface import Interrupt
from .jobstate import Job, load
from .watch import HomeWatch

if TYPE_CHECKING:
    import socket
    from collections.abc import Callable


DEFAULT_MAX_WAIT = 180.0


class Waiting(RegistryBase):
    """wait and wait_any."""

    # ---- waiting -----------------------------------------------------------------------
    @_safe
    def wait(self, session_id: str, timeout: float | None = None, interrupt: Interrupt | None = None,
             until: str = "exit") -> dict[str, Any]:
        """Block until the job ends, `timeout` seconds pass (clamped to HERMES_PROCS_MAX_WAIT),
        `interrupt` is set, or `until` holds (core/registry/wait_until.py: input, quiet:S, output:REGEX, port:N).

        Returns `exited` (outcome fields, output), `running` (the condition met), `timeout` (output,
        timeout_note) or `interrupted`; `reason` says which."""
        try:
            condition = wait_until.parse(until)
        except wait_until.UntilError as exc:
            raise BadInput(str(exc)) from None
        try:
            return self._wait(session_id, *_wait_timeout(timeout), interrupt, condition)
        finally:
            if condition.pattern is not None:
                condition.pattern.close()  # its worker process, if it has one

    def _wait(self, session_id: str, timeout: float, note: str | None, interrupt: Interrupt | None,
              condition: wait_until.Until, baseline: dict[int, int | None] | None = None) -> dict[str, Any]:
        """wait, with `timeout` checked (and `note` saying it was clamped); `baseline`: see
        wait_until.checker."""
        job = self._job(session_id)
        deadline = time.monotonic() + timeout
        met: dict[str, Any] = {}
        try:
            check = wait_until.checker(condition, job, baseline) if job.running else None
        except wait_until.UntilError as exc:
            raise BadInput(str(exc)) from None
        while job.running:  # the supervisor may die while we wait: then wait for the process itself
            left, record = deadline - time.monotonic(), None
            if job.supervised and left > 0:
                outcome, record, met = self._wait_socket(job, left, interrupt, check)
            elif left > 0:
                outcome = _wait_process(job.root, left, interrupt)
            else:
                outcome = "timeout"
            if outcome != "exited":
                result = {"status": "running" if outcome == "met" else outcome, "session_id": job.session_id,
                          "reason": outcome, **met, "output": self._tail_text(job, 2000)}
                if outcome == "timeout":
                    result["timeout_note"] = note or f"still running after {timeout:g}s"
                return result
            job = load(job.dir)
            if job.exit is None and record is not None:  # not on disk (yet): the supervisor's word
                job.exit = record
        result = {"status": "exited", "session_id": job.session_id, "reason": "exited", **met,
                  **_outcome_fields(job), "output": self._tail_text(job, 2000)}
        if note:
            result["timeout_note"] = note
        return result

    @_safe
    def wait_any(self, session_ids: builtins.list[str] | tuple[str, ...], timeout: float | None = None,
                 interrupt: Interrupt | None = None) -> dict[str, Any]:
        """Block until the first of `session_ids` (a list of ids or unique prefixes) has ended,
        `timeout` seconds pass (clamped as for wait) or `interrupt` is set. Woken by inotify on the
        home (every exit appends to events.jsonl: core/registry/watch.py), with a 1 s look in any case (a
        job whose supervisor died ends without an event).

        Returns `exited` with that job's `session_id`, outcome fields and output, and `running`
        (the ids of the others still running); or `timeout` / `interrupted` with `running`."""
        ids = self._wait_any_ids(session_ids)
        timeout, note = _wait_timeout(timeout)
        deadline = time.monotonic() + timeout
        with HomeWatch(self.home) as watch:
            while True:
                jobs = [self._job(sid) for sid in ids]
                running = [job.session_id for job in jobs if job.running]
                done = next((job for job in jobs if not job.running), None)
                if done is not None:
                    result = {"status": "exited", "session_id": done.session_id, "reason": "exited",
                              **_outcome_fields(done), "output": self._tail_text(done, 2000), "running": running}
                    return {**result, "timeout_note": note} if note else result
                left = deadline - time.monotonic()
                if left <= 0:
                    return {"status": "timeout", "reason": "timeout", "running": running,
                            "timeout_note": note or f"all {len(running)} still running after {timeout:g}s"}
                if interrupt is not None and interrupt.is_set():
                    return {"status": "interrupted", "reason": "interrupted", "running": running}
                watch.wait(min(left, 0.2 if interrupt is not None else 1.0))

    def _wait_any_ids(self, session_ids: object) -> builtins.list[str]:
        """wait_any's ids, checked and resolved (prefixes to full ids), each once."""
        if isinstance(session_ids, (str, bytes)) or not isinstance(session_ids, (list, tuple)):
            raise BadInput("session_ids must be a list of job ids")
        if not 1 <= len(session_ids) <= 10_000:
            raise BadInput(f"session_ids must name 1 to 10000 jobs, not {len(session_ids)}")
        return list(dict.fromkeys(self._resolve(sid) for sid in session_ids))

    def _wait_socket(self, job: Job, timeout: float, interrupt: Interrupt | None,
                     check: Callable[[], dict[str, Any] | None] | None = None,
                     ) -> tuple[str, dict[str, Any] | None, dict[str, Any]]:
        """(outcome, the supervisor's exit record or None, the fields of the condition met): outcome is
        "exited", "met" (the `until` check held), "timeout" or "interrupted"."""
        deadline = time.monotonic() + timeout
        try:
            sock = protocol.connect(job.dir, retry_for=2.0)
        except protocol.SupervisorGone:
            return "exited", None, {}
        step = wait_until.POLL_STEP if (interrupt or check) else None
        with sock:
            try:
                sock.sendall(b'{"op": "wait"}\n')
            except OSError:  # it died between connect and send: the caller looks again
                return "exited", None, {}
            while True:
                met = check() if check else None
                if met:
                    return "met", None, met
                left = deadline - time.monotonic()
                if left <= 0:
                    return "timeout", None, {}
                if interrupt is not None and interrupt.is_set():
                    return "interrupted", None, {}
                ready, _, _ = select.select([sock], [], [], min(left, step or left))
                if ready:  # output printed just before the exit may still hold the match
                    return "exited", _exit_of_reply(sock), (check() or {}) if check else {}


def _wait_timeout(timeout: float | None) -> tuple[float, str | None]:
    """(seconds to wait, a note when `timeout` was clamped to HERMES_PROCS_MAX_WAIT); None waits
    the maximum. Raises BadNumber for a bad value."""
    maximum = _env_float("HERMES_PROCS_MAX_WAIT", DEFAULT_MAX_WAIT)
    if timeout is None:
        return maximum, None
    timeout = seconds(timeout, "timeout", maximum=math.inf)
    if timeout > maximum:
        return maximum, (f"timeout {timeout:g}s was clamped to the maximum of {maximum:g}s "
                         "(HERMES_PROCS_MAX_WAIT); call wait again to keep waiting")
    return timeout, None


def _exit_of_reply(sock: socket.socket) -> dict[str, Any] | None:
    """The exit record in a `wait` reply; None when the supervisor closed or said no more."""
    try:
        sock.settimeout(2.0)
        reply = protocol.read_reply(sock)
    except (protocol.SupervisorGone, OSError, ValueError):
        return None
    record = reply.get("exit")
    return record if isinstance(record, dict) else None


def _wait_process(root: tuple[int, int] | None, timeout: float, interrupt: Interrupt | None) -> str:
    """Wait for an unsupervised job's process to end: "exited", "timeout" or "interrupted"."""
    deadline = time.monotonic() + timeout
    try:
        fd = os.pidfd_open(root[0]) if root else None
    except OSError:  # gone already, or no pidfd here: look now and then instead
        fd = None
    try:
        while root and proctree.is_alive(*root):
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            if interrupt is not None and interrupt.is_set():
                return "interrupted"
            select.select([fd] if fd is not None else [], [], [], min(left, 0.05))
        return "exited"
    finally:
        if fd is not None:
            os.close(fd)
