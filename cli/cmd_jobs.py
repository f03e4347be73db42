"""Commands that start and look at jobs: `run`, `exec`, `ls`, `poll`, `log`."""

from __future__ import annotations

import shlex
import sys
from typing import Annotated, Any, Optional

import typer

from hermes_procs.core.registry.model import JobInfo
from hermes_procs.core.supervisor.text import safe_line

from . import queries
from .app import app
from .options import HomeOpt, IdArg, JsonOpt, existing_registry, opts, registry
from .output import CliError, emit, host_warning, warn


def _join_command(words: list[str]) -> str:
    """One word is used as-is (`run 'make -j4 && make test'`); several are shell-quoted."""
    return words[0] if len(words) == 1 else shlex.join(words)


def _env(items: Optional[list[str]]) -> Optional[dict[str, str]]:
    if not items:
        return None
    env = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CliError(f"--env wants KEY=VALUE, got {item!r}")
        env[key] = value
    return env


PtyOpt = Annotated[bool, typer.Option("--pty", help="Run in a pseudo-terminal.")]
NameOpt = Annotated[Optional[str], typer.Option("--name", metavar="N", help="A label.")]
CwdOpt = Annotated[Optional[str], typer.Option("--cwd", metavar="D", help="Working directory.")]
EnvOpt = Annotated[
    Optional[list[str]],
    typer.Option("--env", "-e", metavar="KEY=VALUE", help="Add or override an environment variable (repeatable)."),
]
TaskOpt = Annotated[Optional[str], typer.Option("--task", metavar="T", help="Task id to file the job under.")]
ReuseOpt = Annotated[
    bool, typer.Option("--reuse", help="When a job of this --name runs, print its id and start nothing.")
]
PortOpt = Annotated[
    Optional[int],
    typer.Option("--port", metavar="N", help="Refuse to start when TCP port N is in use (naming who holds it); "
                                             "`wait --until port` waits for it."),
]
LeaseOpt = Annotated[
    Optional[int],
    typer.Option("--lease", metavar="PID", help="Kill the job when process PID ends (e.g. --lease $$: with this "
                                                "shell); `pin` keeps it."),
]
MaxRuntimeOpt = Annotated[
    Optional[float],
    typer.Option("--max-runtime", metavar="S", help="Kill the job after S seconds (ends timed_out)."),
]
CommandArg = Annotated[
    Optional[list[str]],
    typer.Argument(metavar="-- COMMAND...", help="The command (run with bash -c).", show_default=False),
]


def _spawn_options(**given: Any) -> dict[str, Any]:
    """The spawn arguments given on the command line (the ones left out take the API's defaults)."""
    given["env"] = _env(given.get("env"))
    given["notify_on_complete"] = given.pop("notify", None) or None
    given["watch_patterns"] = given.pop("watch", None) or None
    given["task_id"] = given.pop("task", None)
    given["reuse"] = given.get("reuse") or None
    return {key: value for key, value in given.items() if value is not None}


@app.command("run", context_settings={"allow_interspersed_args": False})
def run_cmd(
    ctx: typer.Context,
    command: CommandArg = None,
    pty: PtyOpt = False,
    name: NameOpt = None,
    cwd: CwdOpt = None,
    notify: Annotated[bool, typer.Option("--notify", help="Emit a completion event when it ends.")] = False,
    watch: Annotated[
        Optional[list[str]],
        typer.Option("--watch", metavar="PATTERN",
                     help="Emit a watch_match event for lines containing PATTERN (repeatable)."),
    ] = None,
    max_runtime: MaxRuntimeOpt = None,
    rows: Annotated[Optional[int], typer.Option("--rows", metavar="R", help="PTY rows (default 30).")] = None,
    cols: Annotated[Optional[int], typer.Option("--cols", metavar="C", help="PTY columns (default 120).")] = None,
    env: EnvOpt = None,
    task: TaskOpt = None,
    quiet_after: Annotated[
        Optional[float], typer.Option("--quiet-after", metavar="S", help="Record a quiet event after S silent seconds.")
    ] = None,
    reuse: ReuseOpt = False,
    port: PortOpt = None,
    lease: LeaseOpt = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Start COMMAND as a durable background job and print its session id.

    Options go before COMMAND (a misspelt one is an error, not part of the command); use `--`
    before a command that starts with a dash.
    Several words are shell-quoted and joined; one word is used as-is (so
    `run 'make -j4 && make test'` works).
    """
    home, as_json = opts(ctx, home, as_json)
    if not command:
        raise CliError("run needs a command, e.g. hermes-procs run -- make test")
    kwargs = _spawn_options(cwd=cwd, name=name, notify=notify, watch=watch, max_runtime=max_runtime, rows=rows,
                            cols=cols, task=task, env=env, quiet_after=quiet_after, reuse=reuse, port=port,
                            lease=lease)
    reg = registry(home)
    result = reg.spawn(_join_command(command), pty=pty, **kwargs)
    host_warning(reg)
    emit(result, as_json, lambda r: str(r["session_id"]))


@app.command("exec", context_settings={"allow_interspersed_args": False})
def exec_cmd(
    ctx: typer.Context,
    command: CommandArg = None,
    yield_ms: Annotated[
        float, typer.Option("--yield-ms", metavar="MS",
                            help="Return after MS milliseconds at most (the job runs on).")
    ] = 10_000,
    pty: PtyOpt = False,
    name: NameOpt = None,
    cwd: CwdOpt = None,
    env: EnvOpt = None,
    task: TaskOpt = None,
    max_runtime: MaxRuntimeOpt = None,
    reuse: ReuseOpt = False,
    port: PortOpt = None,
    lease: LeaseOpt = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Run COMMAND as a job and print its output once it exits, waits for input or --yield-ms pass.

    Exit status: the job's own (128+N when killed by signal N) when it ended; 0 when it still
    runs, its id then on stderr (go on with `submit`, `wait`, `log`, `kill`)."""
    home, as_json = opts(ctx, home, as_json)
    if not command:
        raise CliError("exec needs a command, e.g. hermes-procs exec -- make test")
    kwargs = _spawn_options(cwd=cwd, name=name, env=env, task=task, max_runtime=max_runtime, reuse=reuse, port=port,
                            lease=lease)
    reg = registry(home)
    result = emit(reg.exec(_join_command(command), yield_ms, pty=pty, **kwargs), as_json, yield_text)
    raise typer.Exit(yield_exit(result))


def yield_text(result: dict[str, Any]) -> str:
    """The output of a yielding call (exec, write/submit --yield-ms), as it is."""
    return str(result.get("output") or "").rstrip("\n")


def yield_exit(result: dict[str, Any]) -> int:
    """After a yielding call's output: a cut is said on stderr, and a job still running by its id
    (exit status 0); a job that ended gives its exit status."""
    if result.get("output_note"):
        warn(result["output_note"])
    if result.get("status") == "running":
        sys.stderr.write(f"{safe_line(str(result.get('session_id')))} still running ({result.get('reason')})\n")
        return 0
    return JobInfo.from_dict(result).shell_exit_code()


@app.command("list", hidden=True)  # what pm2 and most people type
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
    stack: Annotated[
        Optional[str], typer.Option("--stack", metavar="STACK", help="Only the jobs of this stack.")
    ] = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List jobs, newest first. `--json` prints the API's full list."""
    home, as_json = opts(ctx, home, as_json)
    queries.ls(home, as_json, show_all=show_all, task=task, session_key=session_key, stack=stack)


@app.command("poll")
def poll_cmd(ctx: typer.Context, session_id: IdArg, home: HomeOpt = None, as_json: JsonOpt = False) -> None:
    """Status of one job and a preview of its latest output."""
    home, as_json = opts(ctx, home, as_json)
    queries.poll(home, session_id, as_json)


@app.command("log")
def log_cmd(
    ctx: typer.Context,
    session_id: IdArg,
    offset: Annotated[
        Optional[int],
        typer.Option("--offset", metavar="N", help="First line (0-based); default: the last --limit lines."),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", "--lines", metavar="N", help="Number of lines.")] = 200,
    since: Annotated[
        Optional[str],
        typer.Option("--since", metavar="WHEN",
                     help="Only output that arrived since WHEN: seconds ago (300), a duration (5m, 1h30m) "
                          "or an ISO time (2026-11-26T06:30:00)."),
    ] = None,
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
    home, as_json = opts(ctx, home, as_json)
    if raw and not follow:
        raise CliError("--raw goes with --follow: `log ID --follow --raw` writes the job's bytes "
                       "(and returns at once for a job that has ended)")
    if follow:
        if since is not None:
            raise CliError("--since and --follow cannot be combined (--since reads what is on disk)")
        if as_json:
            raise CliError("--follow and --json cannot be combined (use `events --follow` for JSON lines)")
        from hermes_procs.core.registry.livestream import AttachError

        from .follow import follow_log

        try:
            rc = follow_log(existing_registry(home), session_id, limit=limit, offset=offset, raw=raw)
        except AttachError as exc:
            raise CliError(str(exc)) from None
        raise typer.Exit(rc)
    queries.log(home, session_id, as_json, offset=offset, limit=limit, since=since)
