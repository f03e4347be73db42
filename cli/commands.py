"""The `hermes-procs` command line (typer).

Every query takes `--json` (print the Python API's dict as one JSON document) and every
command takes `--home PATH` (before or after the subcommand).  Errors are one line on
stderr, `hermes-procs: error: <sentence>`, and exit status 1; never a traceback
(set HERMES_PROCS_DEBUG=1 to see one for an unexpected internal error).

Start-up cost matters (`hermes-procs ls` is run in loops by scripts): this module imports
only typer and the standard library at import time.  The registry, rich, the dashboard
(textual), the MCP server and the text helpers are imported inside the commands that
need them.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Annotated, Any, List, Optional, Protocol

import typer

from hermes_procs.core.model import JobInfo, Signal

PROG = "hermes-procs"


def _install_fast_coercion() -> None:
    """Start-up speed: typer >= 0.26 coerces every non-flag parameter with a pydantic
    TypeAdapter, and importing pydantic alone costs ~65 ms (half of `hermes-procs ls`).
    Our parameters are plain str / int / float / bool / list[str] (no enums,
    files or ranges), so coerce those here; anything else still goes through typer.
    If typer's internals change, this silently does nothing (the CLI is only slower)."""
    try:
        from typer import core as _tcore
        from typer._click.exceptions import BadParameter
        from typer._coercion import RuntimeParam
    except ImportError:  # pragma: no cover - other typer versions
        return
    original = getattr(_tcore._TyperParameter, "get_runtime_param", None)
    if original is None or getattr(original, "_hermes_fast", False):
        return

    class _Plain(RuntimeParam):
        def _coerce_value(self, value, param, ctx):  # noqa: ANN001
            kind = self.annotation
            item = kind.__args__[0] if getattr(kind, "__origin__", None) is list else kind
            values = value if isinstance(value, (list, tuple)) else None
            if item is bool:
                return value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes", "on", "y", "t")
            try:
                if values is not None:
                    return [item(v) for v in values]
                return item(value)
            except (TypeError, ValueError):
                word = {int: "integer", float: "number"}.get(item, item.__name__)
                raise BadParameter(f"{value!r} is not a valid {word}.", ctx=ctx, param=param) from None

    plain = (str, int, float, bool)

    def get_runtime_param(self):  # noqa: ANN001, ANN202
        if getattr(self, "_runtime_param", None) is None:
            desc = getattr(self, "type_descriptor", None)
            ann = getattr(desc, "annotation", None)
            info = getattr(desc, "parameter_info", None)
            simple = ann in plain or (
                getattr(ann, "__origin__", None) is list and getattr(ann, "__args__", (None,))[0] in plain
            )
            if (
                simple
                and getattr(desc, "file_annotation", None) is None
                and info is not None
                and getattr(info, "parser", None) is None
                and getattr(info, "min", None) is None
                and getattr(info, "max", None) is None
            ):
                self._runtime_param = _Plain(parameter_info=info, annotation=ann)
        return original(self)

    get_runtime_param._hermes_fast = True  # type: ignore[attr-defined]
    _tcore._TyperParameter.get_runtime_param = get_runtime_param


_install_fast_coercion()

app = typer.Typer(
    name=PROG,
    add_completion=False,
    pretty_exceptions_enable=False,
    invoke_without_command=True,
    no_args_is_help=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Durable background jobs shared by AI agents and humans.\n\n"
    "Without a subcommand: the dashboard.",
)


# --------------------------------------------------------------------------- errors


class CliError(Exception):
    """A user-facing failure: printed as one line on stderr, exit status `code`."""

    def __init__(self, message: str, code: int = 1, result: Any = None):
        super().__init__(message)
        self.message = message
        self.code = code
        self.result = result


def _one_line(text: str) -> str:
    return " ".join(str(text).split()) or "unknown error"


def _err(message: str) -> None:
    sys.stderr.write(f"{PROG}: error: {_one_line(message)}\n")
    sys.stderr.flush()


# --------------------------------------------------------------------------- options

HomeOpt = Annotated[
    Optional[str],
    typer.Option(
        "--home",
        metavar="PATH",
        help="State home (default: $HERMES_PROCS_HOME, $HERMES_HOME/procs, ~/.hermes/procs).",
        show_default=False,
    ),
]
JsonOpt = Annotated[
    bool, typer.Option("--json", help="Print the Python API's result as one JSON document.")
]
IdArg = Annotated[str, typer.Argument(metavar="ID", help="Session id or a unique prefix (>= 4 hex).")]


def _opts(ctx: typer.Context, home: Optional[str], as_json: bool = False) -> tuple[Optional[str], bool]:
    """Merge per-command --home/--json with the ones given before the subcommand."""
    obj = ctx.obj or {}
    return (home if home is not None else obj.get("home")), bool(as_json or obj.get("json"))


def _registry(home: Optional[str]):
    try:
        from hermes_procs.core import ProcessRegistry
    except ImportError as exc:  # pragma: no cover - broken install
        raise CliError(f"cannot load the registry core: {exc}") from exc
    try:
        return ProcessRegistry(home=home)
    except Exception as exc:  # bad home, permissions, ...
        raise CliError(f"cannot open state home {home or '(default)'}: {exc}") from exc


# --------------------------------------------------------------------------- output helpers


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def _out(text: str = "") -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


ERROR_STATUSES = ("error", "not_found")


def _check(result: Any, as_json: bool, *, extra_errors: tuple[str, ...] = ()) -> dict:
    """Turn an API error dict into a CliError (after printing it when --json)."""
    if isinstance(result, list):  # list() gives a list, or an error dict
        return {"status": "ok", "items": result}
    status = result.get("status")
    if status in ERROR_STATUSES or status in extra_errors:
        if as_json:
            _print_json(result)
        message = result.get("error") or _status_error(result)
        raise CliError(message, result=result)
    return result


def _status_error(result: dict) -> str:
    job = JobInfo.from_dict(result, "the process")
    if job.status == "already_exited":
        return job.already_exited()
    return job.status


def _fmt_duration(seconds: Any) -> str:
    try:
        s = float(seconds)
    except (TypeError, ValueError):
        return "-"
    if s < 0:
        return "-"
    if s < 60:
        return f"{s:.1f}s"
    s = int(s)
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{(s % 3600) // 60:02d}m"
    return f"{s // 86400}d{(s % 86400) // 3600:02d}h"


def _fmt_started(started: float) -> str:
    """Epoch seconds as the local time of day (today) or date and time; "-" when unknown."""
    if not started:
        return "-"
    import time

    local = time.localtime(started)
    if time.strftime("%Y-%m-%d", local) == time.strftime("%Y-%m-%d"):
        return time.strftime("%H:%M:%S", local)
    return time.strftime("%Y-%m-%d %H:%M", local)


def _status_line(job: JobInfo) -> str:
    parts = [job.session_id, job.label()]
    if job.signal:
        parts.append(f"signal {job.signal}")
    if job.pid is not None:
        parts.append(f"pid {job.pid}")
    if job.uptime is not None:
        parts.append(f"{'up' if job.running else 'ran'} {_fmt_duration(job.uptime)}")
    return "  ".join(parts)


def _join_command(words: List[str]) -> str:
    if len(words) == 1:
        return words[0]
    import shlex

    return shlex.join(words)


# --------------------------------------------------------------------------- root / dashboard


@app.callback()
def _root(
    ctx: typer.Context,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    ctx.obj = {"home": home, "json": as_json}
    if ctx.invoked_subcommand is None:
        _dashboard(home, demo=False)


class Dashboard(Protocol):
    """The dashboard, plugged in by the entry point (`hermes_procs.main`): cli/ never imports
    tui/ (import-linter checks it)."""

    def run(self, home: Optional[str], demo: bool) -> int: ...

    def start_demo(self, registry: Any) -> list[dict]: ...


DASHBOARD: Optional[Dashboard] = None


def _plugged_dashboard() -> Dashboard:
    if DASHBOARD is None:
        raise CliError(f"the dashboard is not plugged in here; run `{PROG}` or `python -m hermes_procs`")
    return DASHBOARD


def _dashboard(home: Optional[str], demo: bool) -> None:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise CliError(f"the dashboard needs a terminal; for scripts use `{PROG} ls` (see `{PROG} --help`)")
    rc = _plugged_dashboard().run(home, demo)
    if rc:
        raise typer.Exit(rc)


@app.command("tui")
def tui_cmd(ctx: typer.Context, home: HomeOpt = None) -> None:
    """Open the dashboard (the same as no subcommand)."""
    home, _ = _opts(ctx, home)
    _dashboard(home, demo=False)


@app.command("demo")
def demo_cmd(
    ctx: typer.Context,
    home: HomeOpt = None,
    no_tui: Annotated[
        bool, typer.Option("--no-tui", help="Only start the sample jobs and list them.")
    ] = False,
) -> None:
    """Start a few sample jobs, then open the dashboard.

    Without a terminal (or with --no-tui) the sample jobs are started and listed instead.
    """
    home, _ = _opts(ctx, home)
    if not no_tui and sys.stdin.isatty() and sys.stdout.isatty():
        _dashboard(home, demo=True)
        return
    reg = _registry(home)
    for r in _plugged_dashboard().start_demo(reg):
        if r.get("status") in ERROR_STATUSES:
            _err(r.get("error", "a sample job failed to start"))
    _print_table(reg.list(), show_all=True)


# --------------------------------------------------------------------------- run


@app.command(
    "run",
    context_settings={"allow_interspersed_args": False, "ignore_unknown_options": True},
)
def run_cmd(
    ctx: typer.Context,
    command: Annotated[
        Optional[List[str]],
        typer.Argument(metavar="-- COMMAND...", help="The command (run with bash -c).", show_default=False),
    ] = None,
    pty: Annotated[bool, typer.Option("--pty", help="Run in a pseudo-terminal.")] = False,
    name: Annotated[Optional[str], typer.Option("--name", metavar="N", help="A label.")] = None,
    cwd: Annotated[Optional[str], typer.Option("--cwd", metavar="D", help="Working directory.")] = None,
    notify: Annotated[
        bool, typer.Option("--notify", help="Emit a completion event when it ends.")
    ] = False,
    watch: Annotated[
        Optional[List[str]],
        typer.Option("--watch", metavar="PATTERN", help="Emit a watch_match event for lines containing PATTERN (repeatable)."),
    ] = None,
    max_runtime: Annotated[
        Optional[float],
        typer.Option("--max-runtime", metavar="S", help="Kill the job after S seconds (ends timed_out)."),
    ] = None,
    rows: Annotated[Optional[int], typer.Option("--rows", metavar="R", help="PTY rows (default 30).")] = None,
    cols: Annotated[Optional[int], typer.Option("--cols", metavar="C", help="PTY columns (default 120).")] = None,
    env: Annotated[
        Optional[List[str]],
        typer.Option("--env", "-e", metavar="KEY=VALUE", help="Add or override an environment variable (repeatable)."),
    ] = None,
    task: Annotated[Optional[str], typer.Option("--task", metavar="T", help="Task id to file the job under.")] = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Start COMMAND as a durable background job and print its session id.

    Options go before COMMAND; use `--` before a command that starts with a dash.
    Several words are shell-quoted and joined; one word is used as-is (so
    `run 'make -j4 && make test'` works).
    """
    home, as_json = _opts(ctx, home, as_json)
    if not command:
        raise CliError("run needs a command, e.g. hermes-procs run -- make test")
    kwargs: dict[str, Any] = {"pty": pty}
    if cwd is not None:
        kwargs["cwd"] = cwd
    if name is not None:
        kwargs["name"] = name
    if notify:
        kwargs["notify_on_complete"] = True
    if watch:
        kwargs["watch_patterns"] = list(watch)
    if max_runtime is not None:
        kwargs["max_runtime"] = max_runtime
    if rows is not None:
        kwargs["rows"] = rows
    if cols is not None:
        kwargs["cols"] = cols
    if task is not None:
        kwargs["task_id"] = task
    if env:
        envd = {}
        for item in env:
            key, sep, value = item.partition("=")
            if not sep or not key:
                raise CliError(f"--env wants KEY=VALUE, got {item!r}")
            envd[key] = value
        kwargs["env"] = envd
    result = _check(_registry(home).spawn(_join_command(command), **kwargs), as_json)
    if as_json:
        _print_json(result)
    else:
        _out(str(result.get("session_id")))


# --------------------------------------------------------------------------- ls


@app.command("ls")
def ls_cmd(
    ctx: typer.Context,
    show_all: Annotated[
        bool, typer.Option("--all", "-a", help="Show every finished job (default: running + the 20 newest finished).")
    ] = False,
    task: Annotated[Optional[str], typer.Option("--task", metavar="T", help="Only jobs of this task id.")] = None,
    session_key: Annotated[
        Optional[str], typer.Option("--session-key", metavar="K", help="Only jobs of this session key.")
    ] = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List jobs, newest first. `--json` prints the API's full list."""
    home, as_json = _opts(ctx, home, as_json)
    result = _registry(home).list(task_id=task, session_key=session_key)
    _check(result, as_json)
    if as_json:
        _print_json(result)
        return
    _print_table(result, show_all=show_all)


FINISHED_SHOWN = 20
_COLORS = {"green": "\x1b[32m", "red": "\x1b[31m", "yellow": "\x1b[33m", "": ""}


def _render_table(jobs: list[JobInfo], tty: bool) -> str:
    """Aligned columns (docker-ps style).  Every column but COMMAND keeps its full width;
    COMMAND is cut with an ellipsis to the terminal width (no cut when not a terminal).
    Colours and a bold header only on a terminal.  (Plain string formatting rather than
    rich: `ls` is the command scripts call in loops, and this keeps it fast.)"""
    rows = []
    for j in jobs:
        style = "red" if j.failed else "green" if j.running else "" if j.ended else "yellow"
        cmd = j.command or j.error
        if j.pty:
            cmd = "[pty] " + cmd
        if j.name:
            cmd = f"{j.name}: {cmd}"
        cells = [j.session_id, j.label(), str(j.pid if j.pid is not None else "-"), _fmt_started(j.started),
                 _fmt_duration(j.uptime), " ".join(cmd.split())]
        rows.append((cells, style))
    heads = ["ID", "STATUS", "PID", "STARTED", "DURATION", "COMMAND"]
    right = {2, 4}
    widths = [max([len(heads[i])] + [len(r[0][i]) for r in rows]) for i in range(5)]
    gap = "  "
    room = None
    if tty:
        import shutil

        room = max(12, shutil.get_terminal_size((100, 24)).columns - sum(widths) - len(gap) * 5)

    def line(cells: list[str], style: str = "", head: bool = False) -> str:
        parts = []
        for i in range(5):
            cell = cells[i].rjust(widths[i]) if i in right else cells[i].ljust(widths[i])
            if i == 1 and style and tty:
                cell = f"{_COLORS[style]}{cell}\x1b[0m"
            parts.append(cell)
        cmd = cells[5]
        if room is not None and len(cmd) > room:
            cmd = cmd[: room - 1] + "\u2026"
        text = gap.join(parts + [cmd]).rstrip()
        return f"\x1b[1m{text}\x1b[0m" if head and tty else text

    return "\n".join([line(heads, head=True)] + [line(cells, style) for cells, style in rows])


def _print_table(rows: list[dict], show_all: bool) -> None:
    jobs = [JobInfo.from_dict(row) for row in rows]
    hidden = 0
    if not show_all:
        shown, finished = [], 0
        for j in jobs:
            if j.running:
                shown.append(j)
            elif finished < FINISHED_SHOWN:
                finished += 1
                shown.append(j)
            else:
                hidden += 1
        jobs = shown
    if not jobs:
        _out("No processes." if not hidden else "")
    else:
        _out(_render_table(jobs, sys.stdout.isatty()))
    if hidden:
        _out(f"({hidden} older finished job{'s' if hidden != 1 else ''} hidden; --all shows them)")


# --------------------------------------------------------------------------- poll / log


@app.command("poll")
def poll_cmd(ctx: typer.Context, session_id: IdArg, home: HomeOpt = None, as_json: JsonOpt = False) -> None:
    """Status of one job and a preview of its latest output."""
    home, as_json = _opts(ctx, home, as_json)
    result = _check(_registry(home).poll(session_id), as_json)
    if as_json:
        _print_json(result)
        return
    _out(_status_line(JobInfo.from_dict(result, session_id)))
    if result.get("command"):
        _out(f"$ {result['command']}")
    if result.get("leftover_pids"):
        _out("leftover pids: " + " ".join(str(p) for p in result["leftover_pids"]))
    preview = (result.get("output_preview") or "").rstrip("\n")
    if preview:
        _out("--- output (tail) ---")
        _out(preview)


@app.command("log")
def log_cmd(
    ctx: typer.Context,
    session_id: IdArg,
    offset: Annotated[
        Optional[int], typer.Option("--offset", metavar="N", help="First line (0-based); default: the last --limit lines.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", metavar="N", help="Number of lines.")] = 200,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Then stream live output until the job exits.")
    ] = False,
    raw: Annotated[
        bool, typer.Option("--raw", help="With --follow: write the job's bytes unfiltered (escape sequences included).")
    ] = False,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Print a job's output (ANSI stripped).  --follow streams it until the job exits."""
    home, as_json = _opts(ctx, home, as_json)
    reg = _registry(home)
    if follow:
        if as_json:
            raise CliError("--follow and --json cannot be combined (use `events --follow` for JSON lines)")
        from hermes_procs.cli.follow import follow_log
        from hermes_procs.core.livestream import AttachError

        try:
            rc = follow_log(reg, session_id, limit=limit, offset=offset, raw=raw)
        except AttachError as exc:
            raise CliError(str(exc)) from None
        raise typer.Exit(rc)
    kwargs: dict[str, Any] = {"limit": limit}
    if offset is not None:
        kwargs["offset"] = offset
    result = _check(reg.read_log(session_id, **kwargs), as_json)
    if as_json:
        _print_json(result)
        return
    output = result.get("output") or ""
    if output:
        _out(output)


# --------------------------------------------------------------------------- wait / kill


@app.command("wait")
def wait_cmd(
    ctx: typer.Context,
    session_id: IdArg,
    timeout: Annotated[
        Optional[float], typer.Option("--timeout", metavar="S", help="Give up after S seconds (default: wait for ever).")
    ] = None,
    exit_code: Annotated[
        bool,
        typer.Option("--exit-code", help="Exit with the job's own exit status (128+N when killed by signal N)."),
    ] = False,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Wait for a job to end.

    Exit status: 0 when it has ended (whatever its code; --exit-code passes the job's own
    status through), 1 on timeout or error, 130 when interrupted with Ctrl-C.
    """
    import time

    home, as_json = _opts(ctx, home, as_json)
    reg = _registry(home)
    if timeout is not None and not timeout > 0:
        result = reg.wait(session_id, timeout=timeout)
        _check(result, as_json)
        raise CliError("--timeout must be a positive number of seconds")
    deadline = None if timeout is None else time.monotonic() + timeout
    chunk = 60.0
    while True:
        step = chunk if deadline is None else max(0.001, min(chunk, deadline - time.monotonic()))
        result = _check(reg.wait(session_id, timeout=step), as_json)
        if result.get("status") != "timeout":
            break
        if deadline is not None and time.monotonic() >= deadline - 0.001:
            break
    status = result.get("status")
    if status == "timeout":
        result["timeout_note"] = f"Timed out after {timeout:g}s; the process is still running."
        if as_json:
            _print_json(result)
        sid = result.get("session_id", session_id)
        raise CliError(f"timed out after {timeout:g}s waiting for {sid} (still running)")
    job = JobInfo.from_dict(result, session_id)
    if as_json:
        _print_json(result)
    else:
        _out(_status_line(job))
    if status == "interrupted":
        raise typer.Exit(130)
    if exit_code:
        raise typer.Exit(job.shell_exit_code())


@app.command("kill")
def kill_cmd(
    ctx: typer.Context,
    session_id: IdArg,
    grace: Annotated[
        Optional[float],
        typer.Option("--grace", metavar="S", help="Seconds between SIGTERM and SIGKILL (default 3, $HERMES_PROCS_KILL_GRACE)."),
    ] = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Kill a job's whole process tree (SIGTERM, grace, SIGKILL)."""
    home, as_json = _opts(ctx, home, as_json)
    kwargs = {} if grace is None else {"grace": grace}
    result = _registry(home).kill(session_id, **kwargs)
    if result.get("status") == "error" and result.get("survivors"):
        if as_json:
            _print_json(result)
        pids = " ".join(str(p) for p in result["survivors"])
        raise CliError(f"{result.get('error') or 'some processes survived'} (survivors: {pids})")
    result = _check(result, as_json)
    if as_json:
        _print_json(result)
        return
    job = JobInfo.from_dict(result, session_id)
    if job.status == "already_exited":
        _out(job.already_exited(verb="had"))
    else:
        _out(f"{job.session_id} {job.ended_phrase()}")


# --------------------------------------------------------------------------- stdin


def _unescape(data: str) -> str:
    """Interpret backslash escapes (\\n, \\r, \\t, \\x03, \\e, \\u00e9) in DATA."""
    import re

    simple = {"n": "\n", "r": "\r", "t": "\t", "e": "\x1b", "a": "\x07", "b": "\b", "0": "\0", "\\": "\\"}

    def sub(m: "re.Match[str]") -> str:
        s = m.group(0)
        if s[1] in "xuU":
            return chr(int(s[2:], 16))
        return simple.get(s[1], s)

    return re.sub(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)", sub, data)


def _stdin_result(result: Any, as_json: bool, what: str) -> None:
    result = _check(result, as_json, extra_errors=("already_exited",))
    if as_json:
        _print_json(result)
    elif result.get("bytes_written") is not None:
        n = result["bytes_written"]
        _out(f"{what} {n} byte{'' if n == 1 else 's'}")


EscOpt = Annotated[
    bool, typer.Option("--escapes", "-E", help="Interpret backslash escapes in DATA (\\n, \\r, \\x03, \\e, ...).")
]


@app.command("write")
def write_cmd(
    ctx: typer.Context,
    session_id: IdArg,
    data: Annotated[str, typer.Argument(metavar="DATA", help="Text to send to the job's stdin, as-is.")],
    escapes: EscOpt = False,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Send DATA to a job's stdin (no newline added)."""
    _send_stdin(ctx, session_id, data, escapes, home, as_json, enter=False)


@app.command("submit")
def submit_cmd(
    ctx: typer.Context,
    session_id: IdArg,
    data: Annotated[str, typer.Argument(metavar="[DATA]", help="Text to send before Enter.")] = "",
    escapes: EscOpt = False,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Send DATA followed by Enter (\\n; \\r for a PTY job)."""
    _send_stdin(ctx, session_id, data, escapes, home, as_json, enter=True)


def _send_stdin(ctx, session_id: str, data: str, escapes: bool, home, as_json: bool, enter: bool) -> None:
    home, as_json = _opts(ctx, home, as_json)
    if escapes:
        data = _unescape(data)
    reg = _registry(home)
    send = reg.submit if enter else reg.write
    _stdin_result(send(session_id, data, source="cli"), as_json, "submitted" if enter else "wrote")


@app.command("close")
def close_cmd(ctx: typer.Context, session_id: IdArg, home: HomeOpt = None, as_json: JsonOpt = False) -> None:
    """Close a job's stdin (EOF; Ctrl-D for a PTY job)."""
    home, as_json = _opts(ctx, home, as_json)
    result = _check(_registry(home).close_stdin(session_id), as_json, extra_errors=("already_exited",))
    if as_json:
        _print_json(result)


@app.command("signal")
def signal_cmd(
    ctx: typer.Context,
    session_id: IdArg,
    sig: Annotated[str, typer.Argument(metavar="SIG", help="INT, TERM, HUP, USR1, 2, SIGINT, ...")],
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Send one signal to a job's process group (no kill logic)."""
    home, as_json = _opts(ctx, home, as_json)
    try:
        name = Signal.parse(sig).name
    except ValueError as exc:
        raise CliError(str(exc)) from None
    result = _check(_registry(home).signal(session_id, name), as_json, extra_errors=("already_exited",))
    if as_json:
        _print_json(result)


# --------------------------------------------------------------------------- attach


@app.command("attach")
def attach_cmd(ctx: typer.Context, session_id: IdArg, home: HomeOpt = None) -> None:
    """Connect this terminal to a PTY job (raw).  Detach with Ctrl-].

    Pipe jobs are refused: use `log --follow` with `write`/`submit` for them.
    """
    home, _ = _opts(ctx, home)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise CliError("attach needs a terminal on stdin and stdout")
    from hermes_procs.core.attach import AttachError, attach_terminal

    reg = _registry(home)
    try:
        rc = attach_terminal(reg, session_id)
    except AttachError as exc:
        raise CliError(str(exc)) from None
    raise typer.Exit(rc or 0)


# --------------------------------------------------------------------------- mcp / events / prune


@app.command("mcp")
def mcp_cmd(ctx: typer.Context, home: HomeOpt = None) -> None:
    """Run the MCP server on stdio."""
    home, _ = _opts(ctx, home)
    try:
        from hermes_procs.core.mcp_server import serve
    except ImportError as exc:
        raise CliError(f"the MCP server is not available ({exc}); install the 'mcp' extra") from exc
    serve(home)


@app.command("events")
def events_cmd(
    ctx: typer.Context,
    consumer: Annotated[
        str, typer.Option("--consumer", metavar="NAME", help="Cursor name; each consumer sees each event once.")
    ] = "cli",
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep waiting for new events.")] = False,
    types: Annotated[
        Optional[List[str]], typer.Option("--type", metavar="TYPE", help="Only events of this type (repeatable).")
    ] = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,  # accepted for symmetry: output is always JSON lines
) -> None:
    """Print undelivered events as JSON lines (one object per line), exactly once per consumer."""
    home, _ = _opts(ctx, home, as_json)
    from hermes_procs.core.events_stream import iter_events

    reg = _registry(home)
    try:
        for ev in iter_events(reg, consumer, follow, types=list(types) if types else None):
            if ev.get("status") in ERROR_STATUSES and "type" not in ev:
                _check(ev, False)
            _print_json(ev)
    except KeyboardInterrupt:  # Ctrl-C is how --follow ends
        return


@app.command("prune")
def prune_cmd(ctx: typer.Context, home: HomeOpt = None, as_json: JsonOpt = False) -> None:
    """Delete finished jobs past retention (7 days or the newest 200). Running jobs are kept."""
    home, as_json = _opts(ctx, home, as_json)
    result = _check(_registry(home).prune(), as_json)
    if as_json:
        _print_json(result)
        return
    n = result["pruned"]
    _out(f"pruned {n} finished job{'s' if n != 1 else ''}")


# --------------------------------------------------------------------------- entry point


def main(argv: Optional[List[str]] = None, dashboard: Optional[Dashboard] = None) -> None:
    """Run the command line, mapping every failure to one stderr line; `dashboard` is what
    no subcommand, `tui` and `demo` open (see `hermes_procs.main`)."""
    import signal

    global DASHBOARD
    DASHBOARD = dashboard

    from typer import _click

    # Started in the background (`cmd &`, some test runners) SIGINT arrives ignored; the follow
    # commands must still stop on Ctrl-C / SIGINT.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    code = 0
    try:
        rv = app(args=argv, prog_name=PROG, standalone_mode=False)
        if isinstance(rv, int) and not isinstance(rv, bool):
            code = rv
    except CliError as exc:
        _err(exc.message)
        code = exc.code
    except typer.Exit as exc:  # raised outside the click context
        code = exc.exit_code
    except _click.exceptions.ClickException as exc:  # usage errors, bad option values
        _err(exc.format_message())
        code = 1
    except typer.Abort:
        _err("aborted")
        code = 1
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:
        _quiet_broken_pipe()
        code = 1
    except Exception as exc:  # never a traceback for users
        if os.environ.get("HERMES_PROCS_DEBUG"):
            raise
        _err(f"internal error: {type(exc).__name__}: {exc}")
        code = 1
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_broken_pipe()
    except (OSError, ValueError):
        pass
    sys.exit(code)


def _quiet_broken_pipe() -> None:
    # Further writes to stdout would raise again at interpreter exit.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
