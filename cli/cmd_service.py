"""Commands for the home as a whole: `events`, `prune`, `mcp`."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from .app import app
from .options import HomeOpt, JsonOpt, existing_registry, opts, registry
from .output import ERROR_STATUSES, CliError, check, emit, print_json


@app.command("mcp")
def mcp_cmd(ctx: typer.Context, home: HomeOpt = None) -> None:
    """Run the MCP server on stdio."""
    home, _ = opts(ctx, home)
    try:
        from hermes_procs.core.agents.mcp_server import serve
    except ImportError as exc:
        raise CliError(f"the MCP server is not available ({exc}): install the MCP SDK into this environment "
                       "(pip install 'mcp>=2'), or the mcp extra from the checkout (pip install -e '.[mcp]')") from exc
    registry(home)  # an unusable home (or host) is one line here, not an error inside the server
    serve(home)


@app.command("events")
def events_cmd(
    ctx: typer.Context,
    consumer: Annotated[
        str, typer.Option("--consumer", metavar="NAME", help="Cursor name; each consumer sees each event once.")
    ] = "cli",
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep waiting for new events.")] = False,
    types: Annotated[
        Optional[list[str]], typer.Option("--type", metavar="TYPE", help="Only events of this type (repeatable).")
    ] = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,  # accepted for symmetry: output is always JSON lines
) -> None:
    """Print undelivered events as JSON lines (one object per line), exactly once per consumer."""
    home, _ = opts(ctx, home, as_json)
    from hermes_procs.core.agents.events_stream import iter_events

    reg = registry(home)
    try:
        for event in iter_events(reg, consumer, follow, types=list(types) if types else None):
            if event.get("status") in ERROR_STATUSES and "type" not in event:
                check(event, False)
            print_json(event)
    except KeyboardInterrupt:  # Ctrl-C is how --follow ends
        return


@app.command("prune")
def prune_cmd(
    ctx: typer.Context,
    keep_days: Annotated[Optional[float], typer.Option(
        "--keep-days", metavar="D", help="Keep finished jobs and down stacks D days (default 7, "
                                         "$HERMES_PROCS_KEEP_DAYS); 0: none.")] = None,
    keep_count: Annotated[Optional[int], typer.Option(
        "--keep-count", metavar="N", help="Keep the newest N finished jobs (default 200, "
                                          "$HERMES_PROCS_KEEP_COUNT); 0: none.")] = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Delete finished jobs past retention, and stacks down for as long; running jobs stay.

    Retention: 7 days or the newest 200 finished jobs, whichever keeps fewer;
    --keep-days and --keep-count change it. A stack goes when down for longer than the days kept."""
    home, as_json = opts(ctx, home, as_json)
    emit(existing_registry(home).prune(keep_days=keep_days, keep_count=keep_count), as_json, _pruned)


def _pruned(result: dict[str, Any]) -> str:
    """`pruned 3 finished jobs`, and the stacks removed: `, 1 stack long down (web)`."""
    jobs = result["pruned"]
    line = f"pruned {jobs} finished job{'s' if jobs != 1 else ''}"
    stacks = result.get("pruned_stacks") or []
    if stacks:
        line += f", {len(stacks)} stack{'s' if len(stacks) != 1 else ''} long down ({', '.join(stacks)})"
    return line
