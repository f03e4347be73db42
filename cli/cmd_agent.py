"""Commands that show what the dashboard shows: screen, search, restart."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from . import queries
from .app import app
from .options import HomeOpt, IdArg, JsonOpt, existing_registry, opts
from .output import PROG, CliError, check, emit


def _screen_text(result: dict[str, Any]) -> str:
    lines = list(result["lines"])
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


@app.command("screen")
def screen_cmd(ctx: typer.Context, session_id: IdArg, home: HomeOpt = None, as_json: JsonOpt = False) -> None:
    """Print what a PTY job's terminal shows now (its screen as text)."""
    home, as_json = opts(ctx, home, as_json)
    reg = existing_registry(home)
    job = check(reg.poll(session_id), as_json)
    if not job.get("pty"):
        sid = job["session_id"]
        raise CliError(f"{sid} runs on pipes, not in a terminal: screen needs a job started with `{PROG} run "
                       f"--pty`; read this one with `{PROG} log {sid}` or `{PROG} search {sid} PATTERN`")
    emit(reg.screen(session_id), as_json, _screen_text)


@app.command("search")
def search_cmd(
    ctx: typer.Context,
    words: Annotated[list[str], typer.Argument(metavar="[ID] PATTERN", help="A job (optional) and a regex.")],
    context: Annotated[int, typer.Option("--context", "-C", metavar="N", help="Lines around each match.")] = 2,
    limit: Annotated[int, typer.Option("--limit", metavar="N", help="Matches shown at most.")] = 50,
    task: Annotated[Optional[str], typer.Option(
        "--task", metavar="T", help="Without ID: only this task's jobs.")] = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Search a job's whole log (or every job's, without ID) for a regular expression."""
    home, as_json = opts(ctx, home, as_json)
    queries.search(home, words, as_json, context=context, limit=limit, task=task)


@app.command("restart")
def restart_cmd(
    ctx: typer.Context,
    session_id: Annotated[str, typer.Argument(metavar="ID|STACK", help="A job's id (or unique prefix), or a "
                                                                       "stack's name.")],
    job: Annotated[Optional[str], typer.Argument(metavar="[JOB]", help="With STACK: only this job of it.",
                                                 show_default=False)] = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Run a job's command again as a new job (killing it first if it runs); print the new id.

    `restart STACK [JOB]`: the whole stack in dependency order, or one job of it."""
    home, as_json = opts(ctx, home, as_json)
    from .cmd_stack import is_stack, restart_stack

    if job is not None or is_stack(home, session_id):
        return restart_stack(home, session_id, job, as_json)
    result = existing_registry(home).restart(session_id)
    if isinstance(result, dict) and str(result.get("error", "")).startswith("Invalid session id"):
        result = {**result, "error": f"{result['error']}; no stack has that name either (`hermes-procs stacks`)"}
    emit(result, as_json, lambda r: str(r["session_id"]))
    return None
