"""`main`: the command line run as a program, every failure mapped to one stderr line.

The command modules (cmd_*.py, one per group) add their commands to the typer app
(app.py) when imported here; options.py holds the argument definitions and output.py the
one output function.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Optional

import typer
from typer import _click

from hermes_procs.core.registry.envnumbers import forget_unusable, unusable_settings

from . import (  # noqa: F401 - they add the commands
    cmd_agent,
    cmd_control,
    cmd_dashboard,
    cmd_hosts,
    cmd_input,
    cmd_jobs,
    cmd_service,
    cmd_stack,
    cmd_web,
)
from .app import app
from .cmd_dashboard import Dashboard, plug
from .output import PROG, CliError, err, warn

__all__ = ["Dashboard", "main"]

# the order of the commands in --help: the everyday ones first
ORDER = ("run", "exec", "ls", "poll", "log", "wait", "kill", "signal", "tree", "write", "submit", "close", "attach",
         "up", "down", "stacks", "screen", "search", "restart", "pin", "unpin", "events", "prune", "tui", "demo", "web",
         "hosts", "mcp")
app.registered_commands.sort(key=lambda c: ORDER.index(c.name) if c.name in ORDER else len(ORDER))


def main(argv: Optional[list[str]] = None, dashboard: Optional[Dashboard] = None) -> None:
    """Run the command line and exit with its status; `dashboard` is what no subcommand, `tui`
    and `demo` open (plugged in by `hermes_procs.main`). HERMES_PROCS_DEBUG=1 shows the
    traceback of an unexpected internal error."""
    plug(dashboard)
    # Started in the background (`cmd &`, some test runners) SIGINT arrives ignored; the follow
    # commands must still stop on Ctrl-C / SIGINT.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    forget_unusable()
    code = _run(argv)
    for line in unusable_settings():  # after the answer: stdout stays what scripts parse
        warn(line)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_broken_pipe()
    except (OSError, ValueError):
        pass
    sys.exit(code)


def _run(argv: Optional[list[str]]) -> int:
    try:
        rv = app(args=argv, prog_name=PROG, standalone_mode=False)
        return rv if isinstance(rv, int) and not isinstance(rv, bool) else 0
    except CliError as exc:
        err(exc.message)
        return exc.code
    except typer.Exit as exc:  # raised outside the click context
        return exc.exit_code
    except _click.exceptions.ClickException as exc:  # usage errors, bad option values
        err(exc.format_message())
    except typer.Abort:
        err("aborted")
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `hermes-procs ... | head`: the reader has what it wanted
        _quiet_broken_pipe()
        return 0
    except SystemExit as exc:  # rich (the help) exits 1 on a broken pipe, after muting stdout itself
        if isinstance(exc.__context__, BrokenPipeError):
            return 0
        raise
    except Exception as exc:  # noqa: BLE001 - never a traceback for users
        if os.environ.get("HERMES_PROCS_DEBUG"):
            raise
        err(f"internal error: {type(exc).__name__}: {exc}")
    return 1


def _quiet_broken_pipe() -> None:
    # Further writes to stdout would raise again at interpreter exit.
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
