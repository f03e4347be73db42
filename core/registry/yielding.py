"""Calls that return after a yield time: `exec` (start a command, return its result or a running
job), and the `yield_ms` of `write` / `submit` (the job's answer to what was typed).

Each waits for the first of: the job exits, it waits for input (a read begun after the call:
wait_until's input check), or `yield_ms` pass; and returns the output printed since the call,
capped (OUTPUT_CHARS characters: its head and its tail, and a note saying what was left out).
"""

from __future__ import annotations

import math
from typing import Any

from ..supervisor.bounds import BadNumber, shown
from ..supervisor.text import last_chars, to_text
from . import logstore, wait_until
from .base import _safe
from .jobstate import Job
from .wait import Waiting, _wait_timeout

DEFAULT_YIELD_MS = 10_000
OUTPUT_CHARS = 16_000  # characters of output a yielding call returns at most
HEAD_CHARS = 2_000  # of which the first ones (the command's start), the rest its end
SPAWN_ONLY = ("reused",)  # fields of spawn's result the yield does not overwrite


def yield_seconds(yield_ms: object) -> float:
    """`yield_ms` as seconds: a number of milliseconds, 0 or more (BadNumber otherwise)."""
    if isinstance(yield_ms, bool) or not isinstance(yield_ms, (int, float)) or not math.isfinite(yield_ms) \
            or yield_ms < 0:
        raise BadNumber(f"yield_ms must be a number of milliseconds, 0 or more, not {shown(yield_ms)}")
    return float(yield_ms) / 1000


class Yielding(Waiting):
    """exec, and what write/submit need for their yield."""

    @_safe
    def exec(self, command: str, yield_ms: float = DEFAULT_YIELD_MS, **spawn_options: Any) -> dict[str, Any]:
        """Start `command` (spawn's options: name, cwd, pty, reuse, port, lease, ...) and return at
        the first of: it exits, it waits for input, `yield_ms` pass (clamped as wait's timeout).

        Returns `exited` (exit_code, completion_reason, signal) or `running` (exit_code None),
        with session_id, pid, `reason` (exited, awaiting_input, yielded) and `output`: everything
        it printed so far, capped (`output_note` says what was left out); or spawn's error."""
        seconds = yield_seconds(yield_ms)
        started = self.spawn(command, **spawn_options)
        if started.get("status") != "running":
            return started
        job = self._job(started["session_id"])
        return {**started, **self._yield(job, 0, seconds, None)}

    def _yield(self, job: Job, start: int, seconds: float, baseline: dict[int, int | None] | None) -> dict[str, Any]:
        """Wait up to `seconds` for `job` to exit or wait for input (a read begun after
        `baseline`, when given); its status, reason and the output from absolute offset `start`."""
        timeout, note = _wait_timeout(seconds) if seconds > 0 else (0.0, None)
        got = self._wait(job.session_id, timeout, note, None, wait_until.Until("input"), baseline)
        if got.get("status") not in ("exited", "running", "timeout"):
            return got
        result: dict[str, Any] = {"status": "exited" if got["status"] == "exited" else "running",
                                  "session_id": job.session_id,
                                  "reason": "yielded" if got["status"] == "timeout" else got["reason"],
                                  "exit_code": got.get("exit_code")}
        if got["status"] == "exited":
            result.update(completion_reason=got.get("completion_reason"), signal=got.get("signal"))
        if got.get("timeout_note"):
            result["yield_note"] = got["timeout_note"]
        result["output"], cut = output_since(job, start)
        if cut:
            result["output_note"] = cut
        return result


def output_since(job: Job, start: int) -> tuple[str, str | None]:
    """The job's output from absolute offset `start` as text (escapes stripped), at most
    OUTPUT_CHARS characters: all of it, or its first HEAD_CHARS and its end with a marker between;
    and a note saying what was left out (None when nothing was)."""
    end = logstore.total_bytes(job.dir)
    size = end - start
    if size <= OUTPUT_CHARS * 4:
        text = to_text(logstore.read_bytes(job.dir, start, end))
        if len(text) <= OUTPUT_CHARS:
            return text, None
        head, tail = text[:HEAD_CHARS], text[-(OUTPUT_CHARS - HEAD_CHARS):]
        left_out = f"{len(text) - OUTPUT_CHARS} characters"
    else:
        head = to_text(logstore.read_bytes(job.dir, start, start + HEAD_CHARS * 4))[:HEAD_CHARS]
        tail_bytes = logstore.read_bytes(job.dir, max(start, end - OUTPUT_CHARS * 16), end)
        tail = last_chars(tail_bytes, OUTPUT_CHARS - HEAD_CHARS)
        left_out = f"about {size - len(head.encode()) - len(tail.encode())} bytes"
    note = (f"output cut to its first {len(head)} and last {len(tail)} characters ({left_out} left out "
            f"between them): log (offset, limit) or search reads all of {job.session_id}'s output")
    return f"{head}\n[... {left_out} left out ...]\n{tail}", note
