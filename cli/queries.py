"""The hot queries: `ls`, `poll`, `log` (what is on disk), `wait` and `search`, as plain functions over
their parsed arguments.

Agents run these from a shell in loops, so they are answered without typer: the typer commands
(cmd_jobs.py, cmd_control.py, cmd_agent.py) and the fast path (quick.py) both call these, and nothing here
imports typer, rich or more of the registry than the answer needs. Each returns the command's
exit status; a failure raises CliError (output.py).
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any, Optional

from hermes_procs.core.registry.model import JobInfo
from hermes_procs.core.supervisor.bounds import BadNumber, seconds
from hermes_procs.core.supervisor.text import safe_text

from .home import existing_registry, missing_home, registry
from .jobtable import jobs_text
from .output import CliError, check, emit, status_line, warn

if TYPE_CHECKING:
    from hermes_procs.core.registry.interface import Registry

WAIT_CHUNK = 60.0  # seconds per registry.wait call (the API clamps long waits)


def ls(home: Optional[str], as_json: bool, *, show_all: bool = False, task: Optional[str] = None,
       session_key: Optional[str] = None, stack: Optional[str] = None) -> int:
    """`ls`: the jobs, newest first (the table, or the API's list with --json)."""
    _not_empty(task=task, session_key=session_key, stack=stack)
    missing = missing_home(home)
    if missing:  # a typo in --home looked like every job gone, and made the folder
        warn(f"no state home at {missing}: no job has run there (created by the first run)")
        emit([], as_json, lambda rows: jobs_text(rows, show_all, sys.stdout.isatty()))
        return 0
    reg = registry(home)
    result = reg.list(task_id=task, session_key=session_key)
    if stack is not None and isinstance(result, list):
        result = [row for row in result if row.get("stack") == stack]
        known = reg.stacks(stack) if not result else []  # no rows: say so if there is no such stack
        if isinstance(known, dict) and known.get("status") == "error":
            raise CliError(known["error"])
    emit(result, as_json, lambda rows: jobs_text(rows, show_all, sys.stdout.isatty()))
    return 0


def _not_empty(**filters: Optional[str]) -> None:
    """A filter given as "" (an unset variable in a script) is an error, not "no task"."""
    for name, value in filters.items():
        if value == "":
            flag, what = "--" + name.replace("_", "-"), name.replace("_", " ")
            raise CliError(f"{flag} is empty: give a {what}, or leave {flag} out for every job")


def poll(home: Optional[str], session_id: str, as_json: bool) -> int:
    """`poll ID`: the job's status line, command, ports, lease and the tail of its output."""
    emit(existing_registry(home).poll(session_id), as_json, _poll_text)
    return 0


def _poll_text(result: dict[str, Any]) -> str:
    lines = [status_line(JobInfo.from_dict(result))]
    if result.get("command"):
        # a command of several lines is shown as a shell echoes one: `> ` before each line after
        # the first, so no line of it can pass for a line of the answer
        lines.append("$ " + "\n> ".join(result["command"].split("\n")))
    if result.get("stopped") and result.get("status") == "running":
        lines.append(f"stopped: `hermes-procs signal {result.get('session_id')} CONT` resumes it")
    if result.get("ports"):
        lines.append("listening on: " + " ".join(str(p) for p in result["ports"]))
    if result.get("port") and result.get("status") == "running" and result["port"] not in (result.get("ports") or ()):
        lines.append(f"port {result['port']}: not listening yet")
    lease = result.get("lease")
    if isinstance(lease, dict):
        owner = "running" if lease.get("owner_alive") else "ended"
        ended = ": it was killed when its owner ended" if result.get("killed_by") == "lease" else ""
        lines.append(f"leased to pid {lease.get('pid')} ({owner})" + (", pinned" if lease.get("pinned") else "")
                     + ended)
    if result.get("leftover_pids"):
        lines.append("leftover pids: " + " ".join(str(p) for p in result["leftover_pids"]))
    preview = (result.get("output_preview") or "").rstrip("\n")
    if preview:
        lines += ["--- output (tail) ---", preview]
    return "\n".join(lines)


def log(home: Optional[str], session_id: str, as_json: bool, *, offset: Optional[int] = None, limit: int = 200,
        since: Optional[str] = None) -> int:
    """`log ID` without --follow: lines of the job's output from disk (the last `limit`, or from
    `offset`, or those that arrived `since`)."""
    kwargs: dict[str, Any] = {"limit": limit} if offset is None else {"limit": limit, "offset": offset}
    if since is not None:
        kwargs["since"] = since
    reg = existing_registry(home)
    result = reg.read_log(session_id, **kwargs)
    if as_json or not result.get("capped"):
        emit(result, as_json, lambda r: r.get("output") or "")
        if not as_json and offset is None and since is None:
            _more_before(result, limit)
        return 0
    # one answer holds at most 1 MiB of lines: the lines asked for, in answers of their own
    check(result, False)
    first, shown, left = result["first_line"], result["shown_lines"], result["left_out"]
    dropped = result["dropped_bytes"]
    if offset is None:  # a tail: the lines left out come before the ones shown
        _log_pages(reg, session_id, first - left, first + shown, dropped)
    else:
        _print_lines(result["output"], shown)
        _log_pages(reg, session_id, first + shown, first + shown + left, dropped)
    return 0


def _more_before(result: dict[str, Any], limit: int) -> None:
    """On a terminal, say that a tail left lines out (as `log` prints the last 200 by default,
    a `log ID > file` looked whole); scripts reading stderr from a pipe are told nothing."""
    total = result.get("total_lines")
    if isinstance(total, int) and total > limit and sys.stderr.isatty():
        warn(f"the last {limit} of {total} lines (--limit N shows more, --offset 0 from the first)")


def _log_pages(reg: Registry, session_id: str, pos: int, stop: int, dropped: int) -> None:
    """Print lines `pos` .. `stop - 1` of the job's output, an answer at a time; stop with a
    warning when the log cap drops output meanwhile (the lines are numbered from the first kept)."""
    while pos < stop:
        page = check(reg.read_log(session_id, offset=pos, limit=stop - pos), False)
        if page.get("dropped_bytes") != dropped:
            warn("the job's oldest output was dropped by the log cap meanwhile: the lines after these "
                 "have moved; read them again")
            return
        count = page["shown_lines"] if page.get("capped") else max(0, min(stop, page["total_lines"]) - pos)
        _print_lines(page["output"], count)
        if not page.get("capped"):
            return
        pos += count


def _print_lines(text: str, count: int) -> None:
    """`count` lines of output (`text`, joined by newlines: an empty last line counts too)."""
    if count:
        sys.stdout.write(safe_text(text) + "\n")


def wait(home: Optional[str], session_ids: list[str], as_json: bool, *, timeout: Optional[float] = None,
         exit_code: bool = False, until: str = "exit") -> int:
    """`wait ID...`: until the job ends (or the first of several), or its --until condition holds.
    0 when it did, 130 when interrupted, the job's own status with `exit_code`."""
    reg = existing_registry(home)
    if len(session_ids) > 1 and until != "exit":
        raise CliError("--until works with one job id; several ids wait for the first to end")
    if timeout is not None:  # the API's bounds (a year at most), said of the flag
        try:
            seconds(timeout, "--timeout")
        except BadNumber as exc:
            raise CliError(str(exc)) from None
    result = _wait_for(reg, session_ids, timeout, as_json, until)
    job = JobInfo.from_dict(result, session_ids[0])
    if result.get("status") == "timeout":
        what = job.session_id if len(session_ids) == 1 else f"any of {len(session_ids)} jobs"
        result["timeout_note"] = f"Timed out after {timeout:g}s; the process is still running."
        result["error"] = f"timed out after {timeout:g}s waiting for {what} (still running)"
    # the line from the result as emit hands it over (every string made safe), not from `job`
    emit(result, as_json, lambda r: status_line(JobInfo.from_dict(r, session_ids[0])) + _reason_text(r),
         errors=("timeout",))
    if result.get("status") == "interrupted":
        return 130
    return job.shell_exit_code() if exit_code else 0


def _wait_for(reg: Registry, session_ids: list[str], timeout: Optional[float], as_json: bool,
              until: str = "exit") -> dict[str, Any]:
    """registry.wait (one id) or wait_any (several) in chunks until a job ends or `timeout`
    (None: for ever) passes."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        step = WAIT_CHUNK if deadline is None else max(0.001, min(WAIT_CHUNK, deadline - time.monotonic()))
        if len(session_ids) == 1:
            got = reg.wait(session_ids[0], timeout=step, until=until)
        else:
            got = reg.wait_any(session_ids, timeout=step)
        result: dict[str, Any] = check(got, as_json)
        if result.get("status") != "timeout":
            return result
        if deadline is not None and time.monotonic() >= deadline - 0.001:
            return result


def _reason_text(result: dict[str, Any]) -> str:
    """A `reason:` line when wait returned for an --until condition."""
    if result.get("reason") in (None, "exited", "interrupted"):
        return ""
    return f"\nreason: {result['reason']}" + (f" ({result['matched']!r})" if "matched" in result else "")


def search(home: Optional[str], words: list[str], as_json: bool, *, context: int = 2, limit: int = 50,
           task: Optional[str] = None) -> int:
    """`search [ID] PATTERN`: grep -n's format over a job's whole log, or every job's."""
    if len(words) > 2:
        raise CliError("search takes [ID] PATTERN (quote a pattern with spaces)")
    session_id, pattern = (None, words[0]) if len(words) == 1 else words
    _not_empty(task=task)
    result = existing_registry(home).search(session_id, pattern, context=context, limit=limit, task_id=task)
    emit(result, as_json, lambda r: _matches_text(r, session_id is None, context))
    return 0


def _matches_text(result: dict[str, Any], many: bool, context: int) -> str:
    """`grep -n`'s format; lines count from 1, as grep and the dashboard count them (the API's
    `line_no` is the 0-based `log --offset` of the line). As grep, groups that touch or overlap
    are merged, and `--` goes between two groups only (none with `-C 0`)."""
    lines: dict[tuple[str, int], tuple[str, bool]] = {}
    for match in result["matches"]:
        first = match["line_no"] - len(match["before"])
        for i, line in enumerate([*match["before"], match["line"], *match["after"]]):
            key = (match["session_id"], first + i)
            lines[key] = (line, lines.get(key, ("", False))[1] or first + i == match["line_no"])
    out: list[str] = []
    previous: Optional[tuple[str, int]] = None
    for (sid, line_no), (line, is_match) in lines.items():
        if context and previous is not None and previous != (sid, line_no - 1):
            out.append("--")
        previous = (sid, line_no)
        out.append(f"{sid + ':' if many else ''}{line_no + 1}{':' if is_match else '-'}{line}")
    if result.get("truncated"):
        out.append(f"({result['note']})")
    elif result["total"] > len(result["matches"]):
        out.append(f"({result['total']} matches, {len(result['matches'])} shown; --limit shows more)")
    return "\n".join(out)
