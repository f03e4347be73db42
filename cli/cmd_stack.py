"""Stack commands: `up`, `down`, `stacks`, and `restart STACK [JOB]` (cmd_agent's `restart`
hands a stack name here). The work is the registry's (up, down, restart_stack, stacks: core/stacks/)."""

from __future__ import annotations

import os
from typing import Annotated, Any, Optional

import typer

from hermes_procs.core.supervisor.text import safe_line, safe_strings

from .app import app
from .options import HomeOpt, JsonOpt, existing_registry, opts, registry
from .output import CliError, emit, out, print_json, warn

FileOpt = Annotated[
    Optional[list[str]],  # a list, to refuse a second -f rather than take the last one silently
    typer.Option("--file", "-f", metavar="FILE",
                 help="The stack file (default: the first of hermes-procs.toml, Procfile, process-compose.yaml, "
                      "process-compose.yml, mprocs.yaml here)."),
]
StackArg = Annotated[Optional[str], typer.Argument(metavar="STACK", help="The stack's name.", show_default=False)]
STATE_COLORS = {"up": "\x1b[32m", "ready": "\x1b[32m", "exited": "", "degraded": "\x1b[33m",
                "starting": "\x1b[33m", "waiting": "\x1b[33m", "restarting": "\x1b[33m", "failed": "\x1b[31m",
                "blocked": "\x1b[31m", "unready": "\x1b[31m", "stopped": "", "down": "", "off": ""}


def _no_host() -> None:
    if os.environ.get("HERMES_PROCS_HOST") not in (None, "", "local"):
        raise CliError("stacks run on this machine only: up, down, stacks and restart STACK take no --host (yet)")


def stack_text(result: dict[str, Any], color: bool = False) -> str:
    """`stack shop: up (supervisor pid 42, from /src/shop/hermes-procs.toml)` and one line a job."""
    def paint(word: str) -> str:
        code = STATE_COLORS.get(word, "") if color else ""
        return f"{code}{word}\x1b[0m" if code else word

    where = f"supervisor pid {result['pid']}" if result.get("pid") else "no supervisor"
    # one line each: a newline in a probe's text or the file's folder would pass for a job's row
    source = safe_line(str(result.get("source") or "?"))
    lines = [f"stack {result['stack']}: {paint(result['state'])} ({where}, from {source})"]
    if result.get("status") == "already_up":  # `up` again from the same file
        lines.append("  already up: the file is unchanged, nothing was started")
    if result.get("note"):
        lines.append(f"  note: {safe_line(result['note'])}")
    changes = result.get("reloaded") or {}
    applied = "; ".join(f"{what} {', '.join(names)}" for what, names in changes.items() if names)
    if applied:
        lines.append(f"  the file changed: {applied}")
    jobs = result.get("jobs") or []
    width = max((len(j["name"]) for j in jobs), default=0)
    for job in jobs:
        restarts = f"  restarts {job['restarts']}" if job.get("restarts") else ""
        message = f"  {safe_line(job['message'])}" if job.get("message") else ""
        state = paint(job["state"]) + " " * (10 - len(job["state"]))
        lines.append(f"  {job['name']:<{width}}  {state}  {job.get('session_id') or '-':<17}{restarts}{message}")
    return "\n".join(lines)


def _emit_stack(result: Any, as_json: bool) -> None:
    """The stack's table (also before an error: it shows which job failed), then the error."""
    for line in result.get("warnings") or [] if isinstance(result, dict) else []:
        warn(line)
    if isinstance(result, dict) and result.get("status") == "error" and "jobs" in result:
        if as_json:
            print_json(result)
        else:
            out(stack_text(safe_strings(result), os.isatty(1)))
        raise CliError(str(result.get("error")))
    emit(result, as_json, lambda r: stack_text(r, os.isatty(1)))


def _one_file(files: Optional[list[str]]) -> Optional[str]:
    """The one -f FILE (a stack is read from one file: docker compose merges several, we do not)."""
    if files and len(files) > 1:
        raise CliError(f"-f is given {len(files)} times: a stack is read from one file")
    return files[0] if files else None


@app.command("up")
def up_cmd(
    ctx: typer.Context,
    file: FileOpt = None,
    name: Annotated[Optional[str], typer.Option("--name", metavar="STACK",
                                                help="The stack's name (default: the file's `name`, else the "
                                                     "folder's name).")] = None,
    wait: Annotated[bool, typer.Option("--wait", help="Return once every job is ready (exit 1 when one fails "
                                                      "or blocks).")] = False,
    timeout: Annotated[Optional[float], typer.Option("--timeout", metavar="S",
                                                     help="With --wait: give up after S seconds (default "
                                                          "180).")] = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Bring a project's stack up: its jobs in dependency order.

    Reads hermes-procs.toml, a Procfile, process-compose.yaml or mprocs.yaml.
    The file is checked first: a bad one starts nothing. A stack supervisor
    keeps the stack running when this command, the dashboard or the agent
    exits; `down` stops it.
    """
    home, as_json = opts(ctx, home, as_json)
    if name == "":
        raise CliError("--name is empty: give the stack a name, or leave --name out for the file's")
    if timeout is not None and not wait:
        raise CliError("--timeout works with --wait: how long to wait for the jobs to be ready")
    _no_host()
    _emit_stack(registry(home).up(_one_file(file), name, wait=wait, timeout=timeout), as_json)


@app.command("down")
def down_cmd(ctx: typer.Context, stack: StackArg = None, file: FileOpt = None, home: HomeOpt = None,
             as_json: JsonOpt = False) -> None:
    """Stop a stack: its jobs, dependents first, then its supervisor.

    The stack: STACK, or the one of -f FILE, or of the stack file of this folder."""
    home, as_json = opts(ctx, home, as_json)
    _no_host()
    _emit_stack(existing_registry(home).down(stack, _one_file(file)), as_json)


@app.command("stacks")
def stacks_cmd(ctx: typer.Context, stack: StackArg = None, home: HomeOpt = None, as_json: JsonOpt = False) -> None:
    """The stacks of the home with their state and their jobs' states."""
    home, as_json = opts(ctx, home, as_json)
    _no_host()
    result = existing_registry(home).stacks(stack)
    emit(result, as_json, lambda rows: "\n".join(stack_text(r, os.isatty(1)) for r in rows) or "No stacks.")


def is_stack(home: Optional[str], target: str) -> bool:
    """True when `target` names a stack of the home (`restart` then restarts the stack)."""
    result = existing_registry(home).stacks()
    return isinstance(result, list) and any(r.get("stack") == target for r in result)


def restart_stack(home: Optional[str], stack: str, job: Optional[str], as_json: bool) -> None:
    _no_host()
    _emit_stack(existing_registry(home).restart_stack(stack, job), as_json)
