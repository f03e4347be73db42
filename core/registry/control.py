"""Acting on a running job: input (`write`, `submit`, `close_stdin`), `resize`, signals (to the
job, or to one of its processes), watch patterns, a live `stream`, `kill`, and `pin` / `unpin`
(a leased job kept when its owner ends, or not)."""

from __future__ import annotations

import builtins
import signal
import time
from pathlib import Path
from typing import Any

from ..supervisor import proctree, text, wire
from ..supervisor.bounds import seconds, terminal_size, whole
from . import leases, logstore, processes, protocol, wait_until
from .base import MAX_WRITE, BadInput, _env_float, _outcome_fields, _safe
from .jobstate import CorruptJob, Job, load
from .model import Signal
from .spawn import _check_watch_patterns
from .yielding import Yielding, yield_seconds


class Controlling(Yielding):
    """The verbs that act on a running job."""

    @_safe
    def write(self, session_id: str, data: str | bytes, source: str = "agent",
              yield_ms: float | None = None) -> dict[str, Any]:
        """Send `data` (str or bytes, at most 1 MiB) to the job's stdin as it is. `yield_ms`: then
        wait until the job waits for input again, exits, or that many ms pass, and return what it
        printed after this write as `output` (with status, reason, exit_code as exec gives them).

        Returns `ok` with bytes_written, `already_exited`, or `error` when stdin is closed."""
        return self._write(session_id, data, source, enter=False, yield_ms=yield_ms)

    @_safe
    def submit(self, session_id: str, data: str | bytes = "", source: str = "agent",
               yield_ms: float | None = None) -> dict[str, Any]:
        """As `write`, with Enter appended (\n; \r for a PTY job)."""
        return self._write(session_id, data, source, enter=True, yield_ms=yield_ms)

    def _write(self, session_id: str, data: object, source: object, enter: bool,
               yield_ms: float | None = None) -> dict[str, Any]:
        seconds = None if yield_ms is None else yield_seconds(yield_ms)
        if isinstance(data, str):
            try:  # a shell's argument of bytes that are not UTF-8 (\xff) comes as escapes: those bytes
                raw = data.encode("utf-8", "surrogateescape")
            except UnicodeEncodeError:
                raise BadInput("data holds a lone surrogate: it is not text (send bytes)") from None
        elif isinstance(data, (bytes, bytearray)):
            raw = bytes(data)
        else:
            raise BadInput(f"data must be a string, not {type(data).__name__}")
        if not isinstance(source, str) or not source or len(source) > 32:
            raise BadInput("source must be a short name such as 'agent', 'human' or 'cli'")
        job = self._job(session_id)
        if enter:
            raw += b"\r" if job.meta.get("pty") else b"\n"
        if len(raw) > MAX_WRITE:
            raise BadInput(f"data is {len(raw)} bytes; at most {MAX_WRITE} bytes can be written per call")
        if not job.running:
            return self._already_exited(job)
        if seconds is not None:  # where the answer starts, and who reads stdin before it is sent
            start, baseline = logstore.total_bytes(job.dir), wait_until.blocked_counts(job)
        import base64  # here: loaded by a write, not by every CLI query

        reply = self._live(job, {"op": "write", "data": base64.b64encode(raw).decode(), "source": source})
        if not reply.get("ok"):
            return self._live_error(job, reply)
        result = {"status": "ok", "session_id": job.session_id, "bytes_written": reply["bytes_written"]}
        if seconds is None:
            return result
        return {**result, **self._yield(job, start, seconds, baseline)}

    @_safe
    def close_stdin(self, session_id: str) -> dict[str, Any]:
        """End the job's input (EOF for a PTY job, the pipe closed otherwise). Returns `ok` or `already_exited`."""
        job = self._job(session_id)
        if not job.running:
            return self._already_exited(job)
        reply = self._live(job, {"op": "close_stdin"})
        return {"status": "ok", "session_id": job.session_id} if reply.get("ok") else self._live_error(job, reply)

    @_safe
    def resize(self, session_id: str, rows: int, cols: int) -> dict[str, Any]:
        """Set a PTY job's terminal size (1-1000 each). Returns `ok` with rows, cols, or `already_exited`."""
        terminal_size(rows, cols)
        job = self._job(session_id)
        if not job.running:
            return self._already_exited(job)
        reply = self._live(job, {"op": "resize", "rows": rows, "cols": cols})
        if reply.get("ok"):
            return {"status": "ok", "session_id": job.session_id, "rows": rows, "cols": cols}
        return self._live_error(job, reply)

    @_safe
    def signal(self, session_id: str, sig: str | int) -> dict[str, Any]:
        """Send one signal (INT, SIGINT, 2, ...; see model.SENDABLE_SIGNALS) to the job's process group.

        Returns `ok`, `already_exited`, or `error` for a signal that cannot be sent."""
        try:
            name = Signal.parse(sig).name
        except ValueError as exc:
            raise BadInput(str(exc)) from None
        job = self._job(session_id)
        if not job.running:
            return self._already_exited(job)
        root = job.root
        if job.unsupervised and root:  # no supervisor to ask: the root's process group, identity-checked
            for pid, ticks in proctree.group_members(*root).items():
                proctree.send(pid, ticks, getattr(signal, "SIG" + name))
            return {"status": "ok", "session_id": job.session_id}
        reply = self._live(job, {"op": "signal", "signal": name})
        return {"status": "ok", "session_id": job.session_id} if reply.get("ok") else self._live_error(job, reply)

    @_safe
    def signal_process(self, session_id: str, pid: int, sig: str | int,
                       start_ticks: int | None = None) -> dict[str, Any]:
        """Send one signal (as `signal` takes them) to ONE process of the job: `pid` must be a
        member of the job by proctree's rule (pid + start ticks checked; `start_ticks`, as
        `tree` showed it, pins the exact process). Returns `ok` with pid and signal, or `error`."""
        try:
            name = Signal.parse(sig).name
        except ValueError as exc:
            raise BadInput(str(exc)) from None
        whole(pid, "pid", 1)
        if start_ticks is not None:
            whole(start_ticks, "start_ticks", 0)
        job = self._job(session_id)
        error = processes.signal_member(job.tree().scan(), pid, getattr(signal, "SIG" + name), start_ticks)
        if error:
            raise BadInput(f"{job.session_id}: {error}")
        return {"status": "ok", "session_id": job.session_id, "pid": pid, "signal": name}

    @_safe
    def set_watch_patterns(self, session_id: str, patterns: builtins.list[str]) -> dict[str, Any]:
        """Replace a running job's watch_patterns from now on (output already scanned stays)."""
        _check_watch_patterns(patterns)
        job = self._job(session_id)
        if not job.running:
            return self._already_exited(job)
        reply = self._live(job, {"op": "watch", "patterns": patterns})
        if reply.get("ok"):
            return {"status": "ok", "session_id": job.session_id, "watch_patterns": reply["patterns"]}
        return self._live_error(job, reply)

    @_safe
    def pin(self, session_id: str) -> dict[str, Any]:
        """Keep a leased job (spawn's `lease`) running when its owner ends. Returns `ok` with
        `lease` ({pid, pinned, owner_alive}), `already_exited`, or `error` for a job without a lease."""
        return self._pin(session_id, True)

    @_safe
    def unpin(self, session_id: str) -> dict[str, Any]:
        """Undo `pin`: the job's tree is killed when its lease owner ends (at once if it has)."""
        return self._pin(session_id, False)

    def _pin(self, session_id: str, pinned: bool) -> dict[str, Any]:
        job = self._job(session_id)
        if leases.view(job.dir, job.meta) is None:
            raise BadInput(f"{job.session_id} has no lease, so there is nothing to {'pin' if pinned else 'unpin'}: "
                           "it runs until it ends or is killed")
        if not job.running:
            return self._already_exited(job)
        reply = self._live(job, {"op": wire.PIN, "pinned": pinned})
        if not reply.get("ok"):
            return self._live_error(job, reply)
        return {"status": "ok", "session_id": job.session_id, "lease": leases.view(job.dir, job.meta)}

    def stream(self, session_id: str, input: bool = False, source: str = "human") -> protocol.Stream:
        """A live attach from the current end of the output (`stream.offset`); older output is in
        the log files. Raises IdError or protocol.SupervisorGone (unlike the dict-returning methods)."""
        return protocol.Stream.open(self.job_dir(session_id), input=input, source=source)

    # ---- kill --------------------------------------------------------------------------
    @_safe
    def kill(self, session_id: str, grace: float | None = None) -> dict[str, Any]:
        """Kill the job's whole process tree: SIGTERM, then SIGKILL after `grace` seconds.

        Returns `killed` (outcome fields, output), `already_exited`, or `error` with survivors."""
        grace = _env_float("HERMES_PROCS_KILL_GRACE", 3.0) if grace is None else seconds(
            grace, "grace", allow_zero=True)
        try:
            job = self._job(session_id)
        except CorruptJob:  # damaged files never block a kill the supervisor can still do
            return self._kill_damaged(self.job_dir(session_id), grace)
        if not job.supervisor_alive:
            return self._kill_fallback(job, grace)
        timeout = grace + 30
        reply = self._live(job, {"op": "kill", "grace": grace, "expires": time.time() + timeout}, timeout=timeout)
        if not reply.get("ok") and reply.get("exited"):  # finished (or died) while we asked
            return self._kill_fallback(load(job.dir), grace)
        if reply.get("stuck"):  # stopped: kill the tree ourselves; it refuses the request later
            result = self._kill_fallback(job, grace, was_running=job.exit is None)
            result["note"] = (f"{reply['error']}: the job's processes were killed directly; its exit is "
                              "recorded when the supervisor runs again")
            return result
        if not reply.get("ok"):
            return {"status": "error", "session_id": job.session_id, "error": reply.get("error", "failed")}
        job = load(job.dir)
        return self._kill_result(job, reply.get("survivors", []),
                                 was_running=job.outcome.get("completion_reason") == "killed")

    def _kill_damaged(self, jobdir: Path, grace: float) -> dict[str, Any]:
        """Kill a job whose folder cannot be read, through its supervisor; the CorruptJob error
        stands when no supervisor answers."""
        try:
            reply = protocol.request(jobdir, {"op": "kill", "grace": grace}, timeout=grace + 30)
        except (protocol.SupervisorGone, OSError, ValueError):
            load(jobdir)  # raises the CorruptJob that says what is damaged
            raise
        if not reply.get("ok"):
            return {"status": "error", "session_id": jobdir.name, "error": reply.get("error", "kill failed")}
        survivors = reply.get("survivors") or []
        if survivors:
            return {"status": "error", "session_id": jobdir.name, "survivors": survivors,
                    "error": f"could not kill {len(survivors)} process(es) of the job: {survivors}"}
        record = reply.get("exit")
        if not isinstance(record, dict):
            record = {}
        return {"status": "killed", "session_id": jobdir.name, "exit_code": record.get("exit_code"),
                "completion_reason": record.get("completion_reason"), "signal": record.get("signal"),
                "output": text.last_chars(logstore.tail_bytes(jobdir, 12288), 2000)}

    def _kill_fallback(self, job: Job, grace: float, was_running: bool | None = None) -> dict[str, Any]:
        """Kill without the supervisor's help: a lost job's process (it may run on, unsupervised),
        an exited job's leftovers, the tree of a job whose supervisor is stopped. Only the job's
        own processes (proctree's rule) are signalled, and no exit record is written: only the
        supervisor, the job's parent, can know the exit code."""
        was_running = job.unsupervised if was_running is None else was_running
        survivors = proctree.kill_tree(job.tree(), grace) if job.proc else []
        return self._kill_result(load(job.dir), survivors, was_running)

    def _kill_result(self, job: Job, survivors: builtins.list[int], was_running: bool) -> dict[str, Any]:
        if survivors:
            return {"status": "error", "session_id": job.session_id, "survivors": survivors,
                    "error": f"could not kill {len(survivors)} process(es) of the job: {survivors}"}
        status = "killed" if was_running else "already_exited"
        result = {"status": status, "session_id": job.session_id, **_outcome_fields(job),
                  "output": self._tail_text(job, 2000)}
        if job.outcome.get("completion_reason") == "lost":
            result["note"] = "its supervisor was lost, so its exit code is unknown"
        return result
