"""`main`: the command line run as a program, every failure mapped to one stderr line.

The hot queries (`ls`, `poll`, `log`, `wait` and `search` in their plain forms) are answered by quick.py
without importing typer; every other line goes to the typer app (app.py), to which the command
modules (cmd_*.py, one per group) add their commands when `_typer_app` imports them. options.py
holds the argument definitions and output.py the one output function.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Optional

from hermes_procs.core.registry.envnumbers import forget_unusable, unusable_settings

from . import quick
from .output import PROG, CliError, err, warn

if TYPE_CHECKING:
    from .cmd_dashboard import Dashboard

__all__ = ["main"]

# the order of the commands in --help: the everyday ones first
ORDER = ("run", "exec", "ls", "poll", "log", "wait", "kill", "signal", "tree", "write", "submit", "close", "attach",
         "up", "down", "stacks", "screen", "search", "restart", "pin", "unpin", "events", "prune", "tui", "demo", "web",
         "hosts", "mcp")


def main(argv: Optional[list[str]] = None, dashboard: Optional[Dashboard] = None) -> None:
    """Run the command line and exit with its status; `dashboard` is what no subcommand, `tui`
    and `demo` open (plugged in by `hermes_procs.main`). HERMES_PROCS_DEBUG=1 shows the
    traceback of an unexpected internal error."""
    # Started in the background (`cmd &`, some test runners) SIGINT arrives ignored; the follow
    # commands must still stop on Ctrl-C / SIGINT.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    forget_unusable()
    code = _guarded(lambda: quick.answer(sys.argv[1:] if argv is None else argv))
    if code is None:
        code = _run(argv, dashboard)
    for line in unusable_settings():  # after the answer: stdout stays what scripts parse
        warn(line)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_broken_pipe()
    except (OSError, ValueError):
        pass
    sys.exit(code)


def _run(argv: Optional[list[str]], dashboard: Optional[Dashboard] = None) -> int:
    """The line parsed and run by the typer app, its errors as one line each."""

    def run() -> int:
        typer, click_exceptions, app = _typer_app(dashboard)
        try:
            rv = app(args=argv, prog_name=PROG, standalone_mode=False)
            return rv if isinstance(rv, int) and not isinstance(rv, bool) else 0
        except typer.Exit as exc:  # raised outside the click context
            return int(exc.exit_code)
        except click_exceptions.ClickException as exc:  # usage errors, bad option values
            err(exc.format_message())
        except typer.Abort:
            err("aborted")
        except SystemExit as exc:  # rich (the help) exits 1 on a broken pipe, after muting stdout itself
            if isinstance(exc.__context__, BrokenPipeError):
                return 0
            raise
        return 1

    code = _guarded(run)
    return 1 if code is None else code


def _typer_app(dashboard: Optional[Dashboard]) -> tuple[Any, Any, Any]:
    """typer, click's exceptions and the app with every command added (imported only here:
    typer costs more than the hot queries' whole answer)."""
    import inspect

    import typer
    from typer._click import exceptions

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
    from .app import app, prose

    cmd_dashboard.plug(dashboard)
    app.registered_commands.sort(key=lambda c: ORDER.index(c.name) if c.name in ORDER else len(ORDER))
    for command in app.registered_commands:
        command.help = prose(command.help or inspect.getdoc(command.callback) or "")
    return typer, exceptions, app


def _guarded(run: Callable[[], Optional[int]]) -> Optional[int]:
    """`run()`, with a CliError, Ctrl-C, a closed pipe or an internal error as its exit status
    (and one line on stderr)."""
    try:
        return run()
    except CliError as exc:
        err(exc.message)
        return exc.code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `hermes-procs ... | head`: the reader has what it wanted
        _quiet_broken_pipe()
        return 0
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
