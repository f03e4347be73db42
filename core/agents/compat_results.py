"""The result dicts of the Hermes adapter (:mod:`.compat`), shaped as stock Hermes 0.19.0 returns
them: the same keys, the same wording, the same numbers where the meaning is the same.

The adapter reads the job from the registry (durable, whole logs); these functions turn what it
read into what Hermes' ``process`` tool, gateway and TUI expect. Where hermes-procs knows more
than stock Hermes (the output of a job recovered after a restart), the answer says more rather
than pretending it does not know.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from .compat_stock import strip_ansi

if TYPE_CHECKING:  # pragma: no cover
    from .compat_session import ProcessSession

__all__ = ["NO_HISTORY", "already_exited", "killed", "list_entry", "log_page", "not_found", "poll_result",
           "stdin_result", "wait_exited", "wait_interrupted", "wait_timeout"]

NO_HISTORY = "Process recovered after restart -- output history unavailable"


def not_found(session_id: Any) -> dict[str, Any]:
    return {"status": "not_found", "error": f"No process with ID {session_id}"}


def poll_result(session: ProcessSession, preview: str, no_history: bool) -> dict[str, Any]:
    """``poll``: status, pid, uptime and the last 1000 characters of output."""
    result: dict[str, Any] = {"session_id": session.id, "command": session.command,
                              "status": "exited" if session.exited else "running", "pid": session.pid,
                              "uptime_seconds": int(time.time() - session.started_at),
                              "output_preview": strip_ansi(preview[-1000:])}
    if session.exited:
        result.update(exit_code=session.exit_code, completion_reason=session.completion_reason,
                      termination_source=session.termination_source)
    if session.detached:
        result["detached"] = True
        if no_history:
            result["note"] = NO_HISTORY
    return result


def log_page(session: ProcessSession, page: dict[str, Any], tail: bool) -> dict[str, Any]:
    """``read_log``: a page of whole lines (`tail`: the last ones, Hermes' ``offset=0``)."""
    lines = page.get("output", "")
    count = page["shown_lines"] if page.get("capped") else len(lines.split("\n")) if lines else 0
    showing = f"{count} lines" + (f"; {_rest(page, tail)}" if page.get("capped") else "")
    return {"session_id": session.id, "command": session.command,
            "status": "exited" if session.exited else "running", "output": lines,
            "total_lines": page.get("total_lines", 0), "showing": showing}


def _rest(page: dict[str, Any], tail: bool) -> str:
    """Where the lines a capped page left out are, in Hermes' terms: its ``offset=0`` is the
    tail, so lines before a tail are read from offset 1 at least (the API's note said offset=0:
    the same page again)."""
    cap, _, _ = page["note"].partition(":")
    first, shown, left = page["first_line"], page["shown_lines"], page["left_out"]
    if not tail:
        return f"{cap}: {left} more lines after them (read on with offset={first + shown})"
    start = max(1, first - left)
    if first <= start:  # only line 0 is left out: Hermes' offset=0 is the tail
        return f"{cap}: the first line is left out (a tail of all {first + shown} lines has it)"
    return f"{cap}: {left} more lines before them (read them with offset={start}, limit={first - start})"


def wait_exited(session: ProcessSession, output: str, note: str | None) -> dict[str, Any]:
    result = {"status": "exited", "command": session.command, "exit_code": session.exit_code,
              "completion_reason": session.completion_reason, "termination_source": session.termination_source,
              "output": strip_ansi(output[-2000:])}
    if note:
        result["timeout_note"] = note
    return result


def wait_interrupted(session: ProcessSession, output: str, note: str | None) -> dict[str, Any]:
    result = {"status": "interrupted", "command": session.command, "output": strip_ansi(output[-1000:]),
              "note": "User sent a new message -- wait interrupted"}
    if note:
        result["timeout_note"] = note
    return result


def wait_timeout(session: ProcessSession, output: str, note: str | None, waited: float) -> dict[str, Any]:
    return {"status": "timeout", "command": session.command, "output": strip_ansi(output[-1000:]),
            "timeout_note": note or f"Waited {waited:g}s, process still running"}


def already_exited(session: ProcessSession, output: str) -> dict[str, Any]:
    """``kill_process`` of a job that had already ended."""
    return {"status": "already_exited", "command": session.command, "exit_code": session.exit_code,
            "completion_reason": session.completion_reason, "termination_source": session.termination_source,
            "output": strip_ansi(output[-2000:])}


def killed(session: ProcessSession, output: str, source: str) -> dict[str, Any]:
    return {"status": "killed", "session_id": session.id, "completion_reason": "killed",
            "termination_source": source, "output": strip_ansi(output[-2000:])}


def stdin_result(raw: dict[str, Any], pty: bool, action: str) -> dict[str, Any]:
    """write/submit/close: ``ok`` (bytes_written, or the EOF message), ``already_exited``, ``error``."""
    status = raw.get("status")
    if status == "ok":
        if action == "close":
            return {"status": "ok", "message": "EOF sent" if pty else "stdin closed"}
        return {"status": "ok", "bytes_written": raw.get("bytes_written", 0)}
    if status == "already_exited":
        return {"status": "already_exited", "error": "Process has already finished"}
    return {"status": status or "error", "error": raw.get("error", "failed")}


def list_entry(session: ProcessSession, preview: str, task_id: str | None,
               session_key: str | None) -> dict[str, Any]:
    """One row of ``list_sessions``."""
    entry: dict[str, Any] = {
        "session_id": session.id, "command": session.command[:200], "cwd": session.cwd, "pid": session.pid,
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(session.started_at)),
        "uptime_seconds": int(time.time() - session.started_at),
        "status": "exited" if session.exited else "running", "output_preview": preview[-200:]}
    if task_id and session_key and session.task_id != task_id and session.session_key == session_key:
        entry["session_scoped"] = True
    if session.watch_patterns and not session._watch_disabled:
        entry.update(watch_patterns=list(session.watch_patterns), watch_hit=session._watch_hits > 0)
    if session.notify_on_complete:
        entry["notify_on_complete"] = True
    if session.persist_on_release:
        entry["persist_on_release"] = True
    if session.exited:
        entry["exit_code"] = session.exit_code
    if session.detached:
        entry["detached"] = True
    return entry
