"""Commands: `tui` (also no subcommand) and `demo`.

The dashboard is plugged in by the entry point (`hermes_procs.main`, through `plug`): cli/
never imports tui/ (import-linter checks it).
"""

from __future__ import annotations

import os
import sys
from typing import Annotated, Any, Optional, Protocol

import typer

from hermes_procs.core.registry.interface import Registry
from hermes_procs.core.supervisor.text import safe_strings

from .app import app
from .jobtable import jobs_text
from .options import HomeOpt, check_home, opts, registry
from .output import ERROR_STATUSES, PROG, CliError, err, out


class Dashboard(Protocol):
    """What `tui` and `demo` open."""

    def run(self, home: Optional[str], demo: bool) -> int: ...

    def start_demo(self, registry: Registry) -> list[dict[str, Any]]: ...

    def stop_demo(self, registry: Registry) -> list[dict[str, Any]]: ...

    def web(self, home: Optional[str], host: str, port: int, read_only: bool, allow_remote: bool,
            max_sessions: int) -> int: ...


_dashboard: Optional[Dashboard] = None


def plug(dashboard: Optional[Dashboard]) -> None:
    """Set the dashboard the commands open (None: they say it is not available)."""
    global _dashboard
    _dashboard = dashboard


def plugged() -> Dashboard:
    if _dashboard is None:
        raise CliError(f"the dashboard is not plugged in here; run `{PROG}` or `python -m hermes_procs`")
    return _dashboard


def open_dashboard(home: Optional[str], demo: bool) -> None:
    """The dashboard over `home`, with the remote hosts of --host ($HERMES_PROCS_HOST), the
    config file and the memory of this home (core/remote/hosts.py)."""
    _check_host()
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise CliError(f"the dashboard needs a terminal; for scripts use `{PROG} ls` (see `{PROG} --help`)")
    check_home(home)
    rc = plugged().run(home, demo)
    if rc:
        raise typer.Exit(rc)


def _check_host() -> None:
    """A bad --host is one line, before any terminal is taken over."""
    host = os.environ.get("HERMES_PROCS_HOST")
    if host in (None, "", "local"):
        return
    from hermes_procs.core.remote.address import parse_host
    from hermes_procs.core.remote.config import ConfigError, host_aliases

    try:
        parse_host(host, host_aliases())
    except (ValueError, ConfigError) as exc:
        raise CliError(str(exc)) from None


@app.command("tui")
@app.command("dashboard", hidden=True)  # the names people try first
@app.command("dash", hidden=True)
def tui_cmd(ctx: typer.Context, home: HomeOpt = None) -> None:
    """Open the dashboard (the same as no subcommand)."""
    home, _ = opts(ctx, home)
    open_dashboard(home, demo=False)


STOP_HINT = f"The sample jobs run until `{PROG} demo --stop`."


@app.command("demo")
def demo_cmd(
    ctx: typer.Context,
    home: HomeOpt = None,
    no_tui: Annotated[bool, typer.Option("--no-tui", help="Only start the sample jobs and list them.")] = False,
    stop: Annotated[bool, typer.Option("--stop", help="Kill the sample jobs that still run.")] = False,
) -> None:
    """Start a few sample jobs (those not already there), then open the dashboard.

    Without a terminal (or with --no-tui) the sample jobs are started and listed instead.
    --stop kills the sample jobs that still run (a later demo starts them anew).
    """
    home, _ = opts(ctx, home)
    if stop:
        results = plugged().stop_demo(registry(home))
        for result in results:
            if result.get("status") in ERROR_STATUSES:
                err(result.get("error", "a sample job could not be killed"))
        out(f"stopped {len(results)} sample job{'s' * (len(results) != 1)}")
        return
    if not no_tui and sys.stdin.isatty() and sys.stdout.isatty():
        open_dashboard(home, demo=True)
        out(STOP_HINT)
        return
    reg = registry(home)
    for result in plugged().start_demo(reg):
        if result.get("status") in ERROR_STATUSES:
            err(result.get("error", "a sample job failed to start"))
    out(jobs_text(safe_strings(reg.list()), show_all=True, tty=sys.stdout.isatty()))
    out(STOP_HINT)
