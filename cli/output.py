"""How the CLI speaks: `emit`, the one output function (the API's dict as JSON with --json, or
a human rendering), one-line errors (`CliError`), and the formatting of durations, times and
status lines.

Errors are one line on stderr, `hermes-procs: error: <sentence>`, exit status 1; never a
traceback. With --json an error result is printed as JSON first, so scripts get the details.

What a job controls (names, commands, argv, cwd, output) never reaches the terminal raw: a
human rendering gets the result with every string through `core.text.safe_text` (escapes shown
as `\x1b`), `out` passes its text through it again (keeping only the colours `ls` adds), errors
through `safe_line`, and JSON is `core.text.safe_json` (C1 and bidi controls escaped too).
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Union, cast

from hermes_procs.core.registry.interface import Registry

if TYPE_CHECKING:
    from hermes_procs.core.remote.client import RemoteRegistry
from hermes_procs.core.registry.model import JobInfo
from hermes_procs.core.supervisor.text import safe_json, safe_line, safe_strings, safe_text

PROG = "hermes-procs"
ERROR_STATUSES = ("error", "not_found")

Result = Union[dict[str, Any], list[dict[str, Any]]]


class CliError(Exception):
    """A user-facing failure: printed as one line on stderr, exit status `code`."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def err(message: str) -> None:
    """`hermes-procs: error: <message on one line>` on stderr."""
    line = safe_line(str(message)) or "unknown error"
    sys.stderr.write(f"{PROG}: error: {line}\n")
    sys.stderr.flush()


def warn(message: str) -> None:
    """`hermes-procs: warning: <message on one line>` on stderr (the command goes on)."""
    sys.stderr.write(f"{PROG}: warning: {safe_line(str(message))}\n")
    sys.stderr.flush()


def host_warning(registry: Registry) -> None:
    """Warn about what a remote host said of itself (core/supervisor/reaper.py: nobody there collects the
    exits of finished jobs), once the registry has connected."""
    if not getattr(registry, "remote", False):
        return
    remote = cast("RemoteRegistry", registry)  # ProcessRegistry(host=URL) made one
    warning = remote.status().get("warning")
    if warning:
        warn(f"{remote.host.label}: {warning}")


_SGR = re.compile(r"(\x1b\[[0-9;]*m)")  # the colours `ls` adds on a terminal (cli/jobtable.py)


def out(text: str = "") -> None:
    """Print human text; anything in it that could act on a terminal is shown escaped, but for
    plain SGR colours (a job's own escapes were made visible text before, by `safe_strings`)."""
    text = "".join(part if i % 2 else safe_text(part) for i, part in enumerate(_SGR.split(text)))
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def print_json(data: Any) -> None:
    sys.stdout.write(safe_json(data) + "\n")
    sys.stdout.flush()


def emit(result: Any, as_json: bool, human: Callable[[Any], str | None] | None = None, *,
         errors: tuple[str, ...] = ()) -> Any:
    """Print a registry result the one way every command does, and return it.

    A status in ERROR_STATUSES or `errors` raises CliError with the result's `error` (with
    --json the result is printed first). Otherwise --json prints the result as one JSON
    document, and without it `human(result)` is printed when it gives text."""
    check(result, as_json, errors)
    if as_json:
        print_json(result)
    elif human is not None:
        text = human(safe_strings(result))
        if text:
            out(text)
    return result


def emit_each(results: list[dict[str, Any]], as_json: bool, human: Callable[[Any], str], verb: str) -> None:
    """`emit` for the results of one command given several jobs: --json prints them as one
    list; without it, a line of `human` for each that did not fail. Failures raise one
    CliError that names each (`could not kill 2 of 3: ...; ...`, the first three)."""
    if as_json:
        print_json(results)
    failed = [_error_message(flag_names(r)) for r in results if r.get("status") in ERROR_STATUSES]
    if not as_json:
        for result in results:
            if result.get("status") not in ERROR_STATUSES:
                out(human(safe_strings(result)))
    if failed:
        more = f"; and {len(failed) - 3} more" if len(failed) > 3 else ""
        raise CliError(f"could not {verb} {len(failed)} of {len(results)}: " + "; ".join(failed[:3]) + more)


def check(result: Any, as_json: bool, errors: tuple[str, ...] = ()) -> Any:
    """The error half of `emit`: raise CliError for an error result (printed first with --json)."""
    status = result.get("status") if isinstance(result, dict) else None  # list() gives a list
    if status in ERROR_STATUSES or status in errors:
        result = flag_names(result)
        if as_json:
            print_json(result)
        raise CliError(_error_message(result))
    return result


def _error_message(result: dict[str, Any]) -> str:
    job = JobInfo.from_dict(result, "the process")
    if job.status == "already_exited":
        return job.already_exited()
    message = job.error or job.status
    if result.get("survivors"):
        message += " (survivors: " + " ".join(str(p) for p in result["survivors"]) + ")"
    return message


def fmt_duration(seconds: float | None) -> str:
    """12.5s, 3m07s, 2h05m, 1d03h; "-" when unknown."""
    if seconds is None or seconds < 0:
        return "-"
    if seconds < 60:
        return f"{seconds:.1f}s"
    s = int(seconds)
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    return f"{s // 86400}d{(s % 86400) // 3600:02d}h"


def fmt_started(started: float) -> str:
    """Epoch seconds as the local time of day (today) or date and time; "-" when unknown."""
    if not started:
        return "-"
    local = time.localtime(started)
    if time.strftime("%Y-%m-%d", local) == time.strftime("%Y-%m-%d"):
        return time.strftime("%H:%M:%S", local)
    return time.strftime("%Y-%m-%d %H:%M", local)


def status_line(job: JobInfo) -> str:
    """`proc_x  exited 3  signal SIGTERM  pid 42  ran 1.2s`."""
    label = job.label()
    parts = [job.session_id, label + (" (waiting for input?)" if job.running and job.awaiting_input else "")]
    if job.signal and job.signal not in label:
        parts.append(f"signal {job.signal}")
    if job.pid is not None:
        parts.append(f"pid {job.pid}")
    if job.uptime is not None:
        parts.append(f"{'up' if job.running else 'ran'} {fmt_duration(job.uptime)}")
    return "  ".join(parts)


# the API's keywords that commands take as flags, as errors begin with them (check() says the flag)
_FLAGS = {"max_runtime": "--max-runtime", "quiet_after": "--quiet-after", "watch_patterns": "--watch",
          "rows": "--rows", "cols": "--cols", "yield_ms": "--yield-ms", "port": "--port", "reuse": "--reuse",
          "lease": "--lease", "limit": "--limit", "offset": "--offset", "context": "--context", "grace": "--grace",
          "timeout": "--timeout", "keep_days": "--keep-days", "keep_count": "--keep-count", "since": "--since",
          "session_id": "ID"}


def flag_names(result: dict[str, Any]) -> dict[str, Any]:
    """An error that starts with an API keyword, said with the flag the user typed."""
    error = result.get("error") if result.get("status") == "error" else None
    if not isinstance(error, str):
        return result
    error = re.sub(r"\buntil='([^']*)'", r"--until \1", error)  # wait's until='port:N'
    word = error.split(" ", 1)[0].rstrip(":")
    # only about the value typed: "port must be...", not "port 80 is in use"
    if word in _FLAGS and re.match(rf"{word}(:| must | needs )", error):
        error = _FLAGS[word] + error[len(word):]
    return {**result, "error": error}
