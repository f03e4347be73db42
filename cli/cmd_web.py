"""Command: `web`, the dashboard in a browser (the server lives in tui/web.py, plugged in)."""

from __future__ import annotations

from typing import Annotated

import typer

from hermes_procs.core.supervisor.bounds import BadNumber, whole

from .app import app
from .cmd_dashboard import plugged
from .options import HomeOpt, check_home, opts
from .output import CliError


@app.command("web")
def web_cmd(
    ctx: typer.Context,
    home: HomeOpt = None,
    host: Annotated[str, typer.Option(
        "--host", "--bind", metavar="ADDR",
        help="Address to bind (alias --bind). Not the root `--host` before the subcommand, which picks a machine.",
    )] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="TCP port (0: a free one).")] = 8765,
    read_only: Annotated[bool, typer.Option(
        "--read-only", help="Watch only: the server refuses kill, signals, new jobs, input, file writes.")] = False,
    allow_remote: Annotated[bool, typer.Option(
        "--allow-remote", help="Allow binding a non-loopback address (then use an SSH tunnel or TLS proxy).")] = False,
    max_sessions: Annotated[int, typer.Option(
        "--max-sessions", help="Most dashboards (browser tabs) running at once; more are refused.")] = 4,
) -> None:
    """Serve the dashboard in a browser at a printed URL with a secret token.

    Binds 127.0.0.1 by default. The URL logs in once: the browser goes to a secret path with a
    cookie scoped to it (no other local server ever receives it); every request needs both and
    a Host/Origin naming this server, else it gets a one-line 403.
    """
    home, _ = opts(ctx, home)
    host = host.strip("[]")
    if not host:
        raise CliError("--host needs an address, e.g. 127.0.0.1")
    for value, flag, lowest, highest in ((port, "--port", 0, 65535), (max_sessions, "--max-sessions", 1, 64)):
        try:
            whole(value, flag, lowest, highest)
        except BadNumber as exc:  # the one wording of numbers (typer's own range check words it as pydantic)
            raise CliError(str(exc)) from None
    check_home(home)
    rc = plugged().web(home, host, port, read_only, allow_remote, max_sessions)
    if rc:
        raise typer.Exit(rc)
