"""`log --follow`: print the last lines of a job's output, then its live output until it ends.

The bytes come from the job's live stream (core/registry/livestream.py: the log before it, then the live
bytes, reconnecting and filling gaps), so nothing is printed twice or skipped.
"""

from __future__ import annotations

import sys
from typing import TextIO

from hermes_procs.core.registry.interface import Registry
from hermes_procs.core.registry.livestream import AttachError, LiveStream, exit_summary, log_before, resolve
from hermes_procs.core.registry.textfilter import TextFilter


class _Printer:
    """Where the bytes go: raw to a binary stdout, or through a TextFilter (colours kept on a
    terminal, whole lines with `\\r` progress collapsed to a pipe or file)."""

    def __init__(self, out: TextIO, raw: bool) -> None:
        self.out = out
        self.binary = getattr(out, "buffer", None) if raw else None
        try:
            tty = out.isatty()
        except (AttributeError, ValueError):
            tty = False
        self.filter = None if raw else TextFilter(keep_sgr=tty)

    def emit(self, data: bytes) -> None:
        if self.binary is not None:
            self.binary.write(data)
            self.binary.flush()
            return
        self._text(self.filter.feed(data) if self.filter else data.decode("utf-8", "replace"))

    def finish(self) -> None:
        if self.filter:
            self._text(self.filter.finish())

    def _text(self, text: str) -> None:
        if text:
            self.out.write(text)
            self.out.flush()


def follow_log(registry: Registry, session_id: str, *, limit: int = 200, offset: int | None = None,
               raw: bool = False, out: TextIO | None = None) -> int:
    """Print the last `limit` lines, then stream live output until the job's stream ends.

    Text mode (default): ANSI stripped; to a terminal colours are kept and `\\r` passes
    through; to a pipe/file whole lines are written, `\\r` progress collapsed.
    raw=True: the job's bytes unchanged. Returns the exit status for the CLI (0)."""
    if offset is not None:
        raise AttachError("--offset cannot be combined with --follow (it prints the last --limit lines, then follows)")
    if limit < 0:
        raise AttachError("--limit must not be negative")
    info = resolve(registry, session_id)
    printer = _Printer(out if out is not None else sys.stdout, raw)
    live = LiveStream.open(registry, info.session_id) if info.running else None
    if live is None:  # finished (or its supervisor is gone): what is on disk is everything
        printer.emit(log_before(registry, info.session_id, None, max_lines=limit))
        printer.finish()
        return 0
    with live:
        try:
            printer.emit(live.backlog(max_lines=limit))
            while (data := live.read(1.0)) != b"":
                if data:
                    printer.emit(data)
        finally:
            printer.finish()
    _say_how_it_ended(registry, info.session_id)
    return 0


def _say_how_it_ended(registry: Registry, session_id: str) -> None:
    """"[proc_x exited with code N]" on stderr, when that is a terminal."""
    try:
        if sys.stderr.isatty():
            sys.stderr.write(f"[{exit_summary(registry, session_id)[0]}]\n")
    except (OSError, ValueError):
        pass
