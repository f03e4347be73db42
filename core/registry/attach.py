"""`attach`: the real terminal connected to a PTY job until detach (Ctrl-]) or the job ends.

Used by `hermes-procs attach ID` and by the dashboard's full-screen attach (inside
`App.suspend()`): the job's live stream (core/registry/livestream.py) is copied to the terminal and the
keys to the job, with the terminal in raw mode (core/registry/rawterm.py).

Standard library only.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, TextIO

from .livestream import AttachError, LiveStream, exit_summary, last_lines, resolve
from .model import JobInfo
from .rawterm import ALT_SCREEN_ON, AltScreenTracker, RawTerminal, raw_terminal, write_all
from .textfilter import TextFilter

__all__ = ["DETACH_KEY", "DETACH_KEY_NAME", "AttachError", "attach_terminal"]

DETACH_KEY = b"\x1d"  # Ctrl-]
DETACH_KEY_NAME = "Ctrl-]"
CONTEXT_BYTES = 256 << 10  # log read to decide on the alternate screen and replay lines


def attach_terminal(registry: Any, session_id: str, detach_key: bytes = DETACH_KEY, *,
                    stdin_fd: int | None = None, stdout_fd: int | None = None, replay_lines: int = 20,
                    source: str = "cli", banner: bool = True) -> int:
    """Connect the real terminal (raw) to a PTY job until detach or the job ends.

    - Raises AttachError *before touching the terminal* when the id is unknown, the job is
      not a PTY job (pipe jobs: use `log --follow` + `write`/`submit`), has exited, or
      its supervisor does not answer.
    - Prints "[attached to proc_x — detach with Ctrl-]]" (unless `banner=False`), replays the
      last `replay_lines` lines of the job's output (escape sequences other than colours
      removed) for context, or switches to the alternate screen when the job is on it; then
      sends a resize nudge (size-1, then the real size) so full-screen programs repaint.
    - Terminal in raw mode (every key, Ctrl-C and Ctrl-Z included, goes to the job),
      restored even on exceptions, SIGTERM or SIGHUP. A size change is passed on to the job.
    - Detach on `detach_key` or EOF on stdin; ends when the job's stream ends and prints how
      the job exited.

    Returns 0 after a detach; the job's exit status when it ended while attached (128+N
    when it was ended by signal N; 0 if unknown); 128+N when attach itself got signal N
    (SIGTERM/SIGHUP).
    """
    # the process's real streams (a TUI may have replaced sys.stdout with a capture object)
    stdin_fd = _fd(sys.__stdin__, 0) if stdin_fd is None else stdin_fd
    stdout_fd = _fd(sys.__stdout__, 1) if stdout_fd is None else stdout_fd
    if not os.isatty(stdin_fd):
        raise AttachError("attach needs a terminal on stdin")
    live = _open_pty_job(registry, session_id, source)
    sid = live.session_id
    with live:
        _flush_python_streams()
        if banner:
            key_name = DETACH_KEY_NAME if detach_key == DETACH_KEY else repr(detach_key)
            write_all(stdout_fd, f"[attached to {sid} — detach with {key_name}]\r\n".encode())
        alt = _show_context(live, stdout_fd, replay_lines)
        with raw_terminal(stdin_fd, stdout_fd, alt) as term:
            _nudge_size(registry, sid, term.size)
            reason = _pump(live, term, detach_key)
    return _report_end(registry, sid, reason, term, stdout_fd)


def _fd(stream: TextIO | None, default: int) -> int:
    try:
        return stream.fileno() if stream is not None else default
    except (OSError, ValueError):
        return default


def _flush_python_streams() -> None:
    for stream in (sys.stdout, sys.__stdout__):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass


def _open_pty_job(registry: Any, session_id: str, source: str) -> LiveStream:
    """The running PTY job's stream with input; AttachError (terminal untouched) otherwise."""
    info = resolve(registry, session_id)
    sid = info.session_id
    if not info.running:
        raise AttachError(info.already_exited())
    if not info.pty:
        raise AttachError(f"{sid} is not a PTY job; attach works with jobs started with --pty "
                          f"(for pipe jobs use `hermes-procs log --follow {sid}` and `write`/`submit`)")
    # A terminal under a flood that falls 4 MiB behind skips ahead (like tmux): no gap fill.
    live = LiveStream.open(registry, sid, input=True, source=source, fill_gaps=False)
    if live is None:
        raise AttachError(f"cannot connect to {sid}: its supervisor is not answering (has it just exited?)")
    return live


def _show_context(live: LiveStream, stdout_fd: int, replay_lines: int) -> AltScreenTracker:
    """Is the job on the alternate screen (a full-screen program)? Then switch this terminal
    to its alternate screen too (the user's screen comes back on detach) and let the resize
    nudge repaint it; otherwise replay the last lines for context."""
    try:
        tail = live.backlog(max_bytes=CONTEXT_BYTES)
    except (OSError, RuntimeError):
        tail = b""
    alt = AltScreenTracker()
    alt.feed(tail)
    if alt.on:
        write_all(stdout_fd, ALT_SCREEN_ON + b"\x1b[H\x1b[2J")
    elif replay_lines > 0 and tail:
        text_filter = TextFilter(keep_sgr=True)
        text = text_filter.feed(last_lines(tail, replay_lines)) + text_filter.finish()
        write_all(stdout_fd, text.replace("\r\n", "\n").replace("\n", "\r\n").encode("utf-8", "replace"))
    return alt


def _nudge_size(registry: Any, sid: str, size: tuple[int, int]) -> None:
    """Resize to one column less, then the real size: a full-screen program repaints."""
    rows, cols = size
    registry.resize(sid, rows, cols - 1 if cols > 1 else cols + 1)
    time.sleep(0.05)
    registry.resize(sid, rows, cols)


def _pump(live: LiveStream, term: RawTerminal, detach_key: bytes) -> str:
    """Copy output to the terminal and keys to the job: "detached", "ended" or "signal"."""
    # Bytes the stream may already hold (read with its header): select() would not see them.
    # One read only: a job flooding output must not keep us from reading the keyboard.
    pending = live.read(0)
    if pending:
        term.write(pending)
    while not term.signals:
        ready = term.wait([live.fileno()], 0.5)
        size = term.new_size(woken=term.wake_fd in ready)
        if size is not None:
            live.registry.resize(live.session_id, *size)
        if live.fileno() in ready:
            data = live.read(0)
            if data == b"":
                return "ended"
            if data:
                term.write(data)
        if term.stdin_fd in ready:
            outcome = _send_keys(live, term.read_keys(), detach_key)
            if outcome:
                return outcome
    return "signal"


def _send_keys(live: LiveStream, keys: bytes | None, detach_key: bytes) -> str:
    """Pass typed bytes to the job up to the detach key: "" to go on, else why to stop."""
    if keys is None:
        return ""
    if keys == b"":
        return "detached"  # the terminal closed
    cut = keys.find(detach_key) if detach_key else -1
    try:
        if cut >= 0:
            if cut:
                live.send(keys[:cut])
            return "detached"
        live.send(keys)
    except (OSError, ValueError):
        return "ended"
    return ""


def _report_end(registry: Any, sid: str, reason: str, term: RawTerminal, stdout_fd: int) -> int:
    """Say why the attach ended; the exit status for the caller (see attach_terminal)."""
    job: JobInfo | None = None
    if reason == "ended":
        summary, job = exit_summary(registry, sid)
        message = f"[{summary}]"
    elif reason == "signal":
        message = f"[detached from {sid} (signal)]"
    else:
        message = f"[detached from {sid}; it keeps running]"
    write_all(stdout_fd, f"\r\n{message}\r\n".encode())
    if reason == "signal" and term.signals:
        return 128 + term.signals[0]
    return job.shell_exit_code() if job is not None and job.exit_code is not None else 0
