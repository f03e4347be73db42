"""The MCP server's stdin, mended: a request holding a lone surrogate escape is answered.

A JSON-RPC line such as ``{"params": {"arguments": {"pattern": "a\\ud800"}}}`` is JSON (the json
module reads it), but the SDK's parser refuses a UTF-16 surrogate that is not half of a pair
and drops the whole line: the client waits for an answer that never comes. A model that cuts
an emoji's escape in two writes exactly that. ``mend_stdin()`` puts a pipe in front of fd 0: a
thread copies each line through, and a line with a lone surrogate escape is read with the json
module and written again with U+FFFD in its place. Other lines, malformed ones too, pass as
they came; the SDK serves the pipe as it served the terminal's or client's stdin.

The answers go out through a pipe too, whose copier notes which requests they answer: when the
client closes stdin (`printf '...' | hermes-procs mcp`), the SDK would cancel the requests still
running and exit without their answers, so the pipe to the SDK is closed only once every request
read has been answered (or after ``DRAIN_TIMEOUT`` seconds). A request counts as read only when
the SDK reads it as one (its own parser decides: a line without ``"jsonrpc": "2.0"`` is dropped
unanswered, so nobody waits for it), and ``notifications/cancelled`` takes its request off the
list. A cancelled call may still run in a worker thread the SDK joins at exit; the process
therefore ends ``EXIT_GRACE`` seconds after the pipe to the SDK closed, answers flushed.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
from typing import Any

from mcp.types import JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse, jsonrpc_message_adapter

from ..supervisor.text import safe_json_text

DRAIN_TIMEOUT = 60.0  # seconds the requests still running when stdin closes may take
EXIT_GRACE = 2.0  # seconds the SDK then has to stop on its own (it takes well under 1 s)


class _Pending:
    """The ids of the requests read from the client and not answered yet."""

    def __init__(self) -> None:
        self.ids: set[Any] = set()
        self.changed = threading.Condition()

    def note(self, line: bytes, asked: bool) -> None:
        """A request or a cancel (`asked`) or an answer (else) went by: add or remove its id. A
        request counts only if the SDK reads it as one (it drops a line it cannot read, such as
        one without ``"jsonrpc": "2.0"``, unanswered); a cancelled request is answered by nothing."""
        if (b'"id"' not in line and b'"requestId"' not in line) or (not asked and not self.ids):
            return  # nothing to count, or an answer to nothing pending: no parse
        try:
            message = jsonrpc_message_adapter.validate_json(line, by_name=False)
        except (ValueError, RecursionError):  # pydantic's ValidationError is a ValueError
            return
        if isinstance(message, JSONRPCRequest) and asked:
            with self.changed:
                self.ids.add(message.id)
        elif isinstance(message, JSONRPCNotification) and asked and message.method == "notifications/cancelled":
            self._answered((message.params or {}).get("requestId"))
        elif isinstance(message, (JSONRPCResponse, JSONRPCError)) and not asked:
            self._answered(message.id)

    def _answered(self, request_id: Any) -> None:
        with self.changed:
            self.ids.discard(request_id)
            self.changed.notify_all()

    def drained(self, timeout: float) -> None:
        with self.changed:
            self.changed.wait_for(lambda: not self.ids, timeout)


def mend_stdin() -> None:
    """Serve fd 0 through a pipe whose lines are mended, and fd 1 through one whose copier notes
    the answers (daemon threads copy both; the answers are all out before the process exits)."""
    pending = _Pending()
    client = os.dup(1)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 1)
    os.close(write_end)
    answers = threading.Thread(target=_copy_answers, args=(read_end, client, pending), daemon=True,
                               name="mcp-stdout")
    answers.start()
    atexit.register(_flush_answers, answers)
    source = os.dup(0)
    read_end, write_end = os.pipe()
    os.dup2(read_end, 0)
    os.close(read_end)
    threading.Thread(target=_copy, args=(source, write_end, pending, answers), daemon=True,
                     name="mcp-stdin").start()


def _copy(source: int, sink: int, pending: _Pending, answers: threading.Thread) -> None:
    """Copy `source` to `sink` a line at a time, mending each; close `sink` at the end, once the
    requests read have been answered. A tool call the client cancelled still runs in its thread,
    which the SDK waits for: the process ends ``EXIT_GRACE`` seconds after `sink` closed."""
    try:
        with open(source, "rb", buffering=1 << 16) as lines, open(sink, "wb", buffering=0) as out:
            for line in lines:
                line = mend(line)
                pending.note(line, asked=True)
                out.write(line)
            pending.drained(DRAIN_TIMEOUT)
    except OSError:  # the server closed its end: nothing is read any more
        pass
    timer = threading.Timer(EXIT_GRACE, _exit_now, args=(answers,))
    timer.daemon = True
    timer.start()


def _exit_now(answers: threading.Thread) -> None:
    """Every answer anyone waits for is out; what still runs was cancelled or will not be read."""
    _flush_answers(answers)
    os._exit(0)


def _copy_answers(source: int, client: int, pending: _Pending) -> None:
    """Copy the server's lines to the client; note each answer once it is written."""
    try:
        with open(source, "rb", buffering=1 << 16) as lines, open(client, "wb", buffering=0) as out:
            for line in lines:
                out.write(_escaped(line))
                pending.note(line, asked=False)
    except OSError:  # the client is gone
        pass


def _escaped(line: bytes) -> bytes:
    """An answer line with C1 and bidi controls (raw in the SDK's `structuredContent`: a client
    may print the line) escaped as safe_json escapes them in the text content."""
    if line.isascii() and b"\x7f" not in line:
        return line
    text = line.decode("utf-8", "surrogateescape")
    return safe_json_text(text).encode("utf-8", "surrogateescape")


def _flush_answers(answers: threading.Thread) -> None:
    """At exit: a moment for the copier to pass on what the server wrote last. (Every answer is
    out already when stdin's end made the server stop; the SDK holds its own copy of the pipe's
    write end, so the copier does not see the pipe end before the process does.)"""
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    answers.join(0.2)


def mend(line: bytes) -> bytes:
    """`line` with each lone surrogate in its JSON strings replaced by U+FFFD (unchanged if it
    holds no surrogate escape or is not JSON)."""
    if b"\\ud" not in line and b"\\uD" not in line:
        return line
    try:
        message = json.loads(line)
        mended = _strings(message)
        return line if mended == message else json.dumps(mended).encode() + b"\n"
    except (ValueError, RecursionError):  # not JSON, or nested too deeply: the SDK says so, as before
        return line


def _strings(value: Any) -> Any:
    """`value` with every string (keys too) made of whole characters."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, list):
        return [_strings(item) for item in value]
    if isinstance(value, dict):
        return {_strings(key): _strings(item) for key, item in value.items()}
    return value
