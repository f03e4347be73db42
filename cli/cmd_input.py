"""Commands that type into a job: `write`, `submit`, `close`, `attach`."""

from __future__ import annotations

import re
import sys
from typing import Annotated, Any, Optional

import typer

from .app import app
from .options import EscOpt, HomeOpt, IdArg, JsonOpt, existing_registry, opts
from .output import CliError, emit

_SIMPLE_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "e": "\x1b", "a": "\x07", "b": "\b", "0": "\0", "\\": "\\"}


def _unescape(data: str) -> str:
    """Interpret backslash escapes (\\n, \\r, \\t, \\x03, \\e, \\u00e9) in DATA; \\xHH is the byte HH."""

    digits = {"x": 2, "u": 4, "U": 8}

    def sub(m: re.Match[str]) -> str:
        s = m.group(0)
        if s[1] in digits:
            if len(s) != 2 + digits[s[1]]:
                raise CliError(f"bad escape '{s}': \\{s[1]} takes exactly {digits[s[1]]} hex digits")
            code = int(s[2:], 16)
            if s[1] == "x" and code >= 0x80:  # the byte, as printf and $'...' read it (write sends it as it is)
                return chr(0xDC00 + code)
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                raise CliError(f"bad escape '{s}': not a Unicode character")
            return chr(code)
        return _SIMPLE_ESCAPES.get(s[1], s)

    return re.sub(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)", sub, data)


def _send_stdin(ctx: typer.Context, session_id: str, data: str, escapes: bool, home: Optional[str], as_json: bool,
                enter: bool, yield_ms: Optional[float] = None) -> None:
    home, as_json = opts(ctx, home, as_json)
    if escapes:
        data = _unescape(data)
    reg = existing_registry(home)
    send = reg.submit if enter else reg.write
    what = "submitted" if enter else "wrote"

    def text(result: dict[str, Any]) -> str:
        n = result["bytes_written"]
        return f"{what} {n} byte{'' if n == 1 else 's'}"

    if yield_ms is None:
        emit(send(session_id, data, source="cli"), as_json, text, errors=("already_exited",))
        return
    from .cmd_jobs import yield_exit, yield_text

    result = emit(send(session_id, data, source="cli", yield_ms=yield_ms), as_json, yield_text,
                  errors=("already_exited",))
    raise typer.Exit(yield_exit(result))


YieldOpt = Annotated[
    Optional[float],
    typer.Option("--yield-ms", metavar="MS",
                 help="Then print what the job answers: its output until it waits for input again, exits, or MS "
                      "milliseconds pass (exit status as `exec`)."),
]


@app.command("write")
def write_cmd(
    ctx: typer.Context,
    session_id: IdArg,
    data: Annotated[str, typer.Argument(metavar="DATA", help="Text to send to the job's stdin, as-is.")],
    escapes: EscOpt = False,
    yield_ms: YieldOpt = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Send DATA to a job's stdin (no newline added)."""
    _send_stdin(ctx, session_id, data, escapes, home, as_json, enter=False, yield_ms=yield_ms)


@app.command("submit")
def submit_cmd(
    ctx: typer.Context,
    session_id: IdArg,
    data: Annotated[str, typer.Argument(metavar="[DATA]", help="Text to send before Enter.")] = "",
    escapes: EscOpt = False,
    yield_ms: YieldOpt = None,
    home: HomeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Send DATA followed by Enter (\\n; \\r for a PTY job)."""
    _send_stdin(ctx, session_id, data, escapes, home, as_json, enter=True, yield_ms=yield_ms)


@app.command("close")
def close_cmd(ctx: typer.Context, session_id: IdArg, home: HomeOpt = None, as_json: JsonOpt = False) -> None:
    """Close a job's stdin (EOF; Ctrl-D for a PTY job)."""
    home, as_json = opts(ctx, home, as_json)
    emit(existing_registry(home).close_stdin(session_id), as_json, lambda r: f"closed the stdin of {r['session_id']}",
         errors=("already_exited",))


@app.command("attach")
def attach_cmd(ctx: typer.Context, session_id: IdArg, home: HomeOpt = None) -> None:
    """Connect this terminal to a PTY job (raw).  Detach with Ctrl-].

    Pipe jobs are refused: use `log --follow` with `write`/`submit` for them.
    """
    home, _ = opts(ctx, home)
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise CliError("attach needs a terminal on stdin and stdout")
    from hermes_procs.core.registry.attach import AttachError, attach_terminal

    reg = existing_registry(home)
    try:
        rc = attach_terminal(reg, session_id)
    except AttachError as exc:
        raise CliError(str(exc)) from None
    raise typer.Exit(rc or 0)
