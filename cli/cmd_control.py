"""Commands that wait for, stop or signal a job (`wait`, `kill`, `signal`), keep a leased one (`pin`,
`unpin`), and `tree`: its processes."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from hermes_procs.core.registry.model import JobInfo, Signal
from hermes_procs.core.supervisor.bounds import BadNumber, seconds
from hermes_procs.core.supervisor.text import safe_line

from . import queries
from .app import app
from .options import HomeOpt, IdArg, JsonOpt, existing_registry, opts
from .output import CliError, emit, emit_each


@app.command("wait")
def wait_cmd(
    ctx: typer.Context,
    session_ids: Annotated[list[str], typer.Argument(
        metavar="ID...", help="Session id, a unique prefix (>= 4 hex), or STACK/JOB; with several, the first to end.")],
    timeout: Annotated[
        Optional[float],
        typer.Option("--timeout", metavar="S", help="Give up after S seconds (default: wait for ever)."),
    ] = None,
    exit_code: Annotated[
        bool,
        typer.Option("--exit-code", help="Exit with the job's own exit status (128+N when killed by signal N)."),
    ] = False,
    until: Annotated[
        str, typer.Option("--until", metavar="WHAT",
                          help="exit, input, quiet:SECONDS, output:REGEX, port:N or port (the job's --port)."),
    ] = "exit",
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Wait for a job to end, or (--until) to ask for input, go quiet, print a match or listen.

    With several ids: until the first of them ends (its id is printed; --json adds `running`).

    Exit status: 0 when it has ended or the --until condition holds (whatever its code;
    --exit-code passes the job's own status through), 1 on timeout or error, 130 when
    interrupted with Ctrl-C.
    """
    home, as_json = opts(ctx, home, as_json)
    code = queries.wait(home, session_ids, as_json, timeout=timeout, exit_code=exit_code, until=until)
    if code:
        raise typer.Exit(code)


def _killed_text(result: dict[str, Any]) -> str:
    job = JobInfo.from_dict(result)
    if job.status == "already_exited":
        return job.already_exited(verb="had")
    return f"{job.session_id} {job.ended_phrase()}"


@app.command("kill")
def kill_cmd(
    ctx: typer.Context,
    session_ids: Annotated[list[str], typer.Argument(
        metavar="ID...", help="Session id, a unique prefix (>= 4 hex), or STACK/JOB; several: each in turn.")],
    grace: Annotated[
        Optional[float],
        typer.Option("--grace", metavar="S",
                     help="Seconds between SIGTERM and SIGKILL (default 3, $HERMES_PROCS_KILL_GRACE)."),
    ] = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Kill a job's whole process tree (SIGTERM, grace, SIGKILL); several ids: each in turn.

    With several ids --json prints a list; exit status 1 when any could not be killed."""
    home, as_json = opts(ctx, home, as_json)
    kwargs = {} if grace is None else {"grace": grace}
    reg = existing_registry(home)
    if len(session_ids) == 1:
        emit(reg.kill(session_ids[0], **kwargs), as_json, _killed_text)
        return
    if grace is not None:  # a bad --grace is one error, not one per id
        try:
            seconds(grace, "grace", allow_zero=True)
        except BadNumber as exc:
            raise CliError(str(exc)) from None
    emit_each([reg.kill(sid, **kwargs) for sid in session_ids], as_json, _killed_text, "kill")


@app.command("signal")
def signal_cmd(
    ctx: typer.Context,
    session_id: IdArg,
    sig: Annotated[str, typer.Argument(metavar="SIG", help="INT, TERM, HUP, USR1, 2, SIGINT, ...")],
    pid: Annotated[
        Optional[int],
        typer.Option("--pid", metavar="PID", help="Only this process of the job (see `hermes-procs tree ID`)."),
    ] = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Send one signal to a job's process group, or (--pid) to one process of the job (no kill logic)."""
    home, as_json = opts(ctx, home, as_json)
    try:
        name = Signal.parse(sig).name
    except ValueError as exc:
        raise CliError(str(exc)) from None
    reg = existing_registry(home)
    if pid is None:
        emit(reg.signal(session_id, name), as_json, lambda r: f"sent {name} to {r['session_id']}",
             errors=("already_exited",))
    else:
        emit(reg.signal_process(session_id, pid, name), as_json,
             lambda r: f"sent {name} to process {pid} of {r['session_id']}")


def _lease_text(result: dict[str, Any]) -> str:
    lease = result.get("lease") or {}
    if lease.get("pinned"):
        return f"pinned {result['session_id']}: it stays when its owner (pid {lease.get('pid')}) ends"
    if lease.get("owner_alive") is False:  # the owner is gone: the lease ends the job now
        return f"unpinned {result['session_id']}: its owner (pid {lease.get('pid')}) has ended, so it is being stopped"
    return f"unpinned {result['session_id']}: it ends with its owner (pid {lease.get('pid')})"


@app.command("pin")
def pin_cmd(ctx: typer.Context, session_id: IdArg, home: HomeOpt = None, as_json: JsonOpt = False) -> None:
    """Keep a leased job (run --lease, an agent's ephemeral job) running when its owner ends."""
    home, as_json = opts(ctx, home, as_json)
    emit(existing_registry(home).pin(session_id), as_json, _lease_text, errors=("already_exited",))


@app.command("unpin")
def unpin_cmd(ctx: typer.Context, session_id: IdArg, home: HomeOpt = None, as_json: JsonOpt = False) -> None:
    """Undo `pin`: the job ends with its lease owner (at once if the owner has ended)."""
    home, as_json = opts(ctx, home, as_json)
    emit(existing_registry(home).unpin(session_id), as_json, _lease_text, errors=("already_exited",))


@app.command("tree")
def tree_cmd(ctx: typer.Context, session_id: IdArg, home: HomeOpt = None, as_json: JsonOpt = False) -> None:
    """Show a job's processes: pid, state, CPU, memory, who waits for input, command."""
    home, as_json = opts(ctx, home, as_json)
    emit(existing_registry(home).tree(session_id), as_json, _tree_text)


def _tree_text(result: dict[str, Any]) -> str:
    rows = result.get("processes") or []
    if not rows:
        return f"{result.get('session_id')} has no processes left."
    ports = [",".join(str(p) for p in row.get("ports") or ()) for row in rows]
    width = max(5, *(len(p) for p in ports))
    lines = [f"{'PID':>7}  {'STATE':<5}  {'CPU%':>5}  {'RSS':>7}  {'WAITS':<5}  {'PORTS':<{width}}  COMMAND"]
    for row, listening in zip(rows, ports, strict=True):
        mark = "input" if row.get("awaiting_input") else ""
        lines.append(f"{row['pid']:>7}  {row['state']:<5}  {row['cpu_percent']:>5.1f}  "
                     f"{_mib(row['rss_bytes']):>7}  {mark:<5}  {listening:<{width}}  "
                     f"{'  ' * row['depth']}{safe_line(row['command'])}")
    if result.get("more_processes"):
        lines.append(f"... and {result['more_processes']} more processes")
    return "\n".join(lines)


def _mib(n: int) -> str:
    return f"{n / (1 << 20):.1f}M"
