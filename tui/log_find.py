"""Finding text in a job's log (``Ctrl-F`` in the log pane): the scan, which runs in the log's
reader thread, and the pane's state of a find.

The scan reads the raw log in 1 MiB chunks (overlapping by the needle's length less one),
case-insensitively, forward or backward from the current line; a line whose bytes match counts
only when its shown text does (escapes removed: log_lines.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from hermes_procs.core.registry import logstore

from .log_lines import render_raw_line

__all__ = ["Finder", "find_line", "line_of"]

CHUNK = 1 << 20


def find_line(idx: logstore.LineIndex, query: str, from_line: int, forward: bool,
              stopped: Callable[[], bool]) -> int | None:
    """The next line after (or the last before) `from_line` whose text contains `query`; None
    when there is none, or when `stopped()` turns true first."""
    needle = query.lower().encode("utf-8", "replace")
    if not needle or not idx.line_count:
        return None
    from_line = max(0, min(from_line, idx.line_count - 1))
    find = _forward if forward else _backward
    return find(idx, query, needle, from_line, stopped)


def _forward(idx: logstore.LineIndex, query: str, needle: bytes, from_line: int,
             stopped: Callable[[], bool]) -> int | None:
    hi, over = idx.end_offset, len(needle) - 1
    pos = idx.line_span(from_line)[1] + 1  # after the current line
    while pos < hi and not stopped():
        data = idx.read(pos, min(hi, pos + CHUNK + over)).lower()
        i = data.find(needle)
        while i != -1:
            line = line_of(idx, pos + i)
            if _line_matches(idx, line, query):  # the bytes matched; does the shown text?
                return line
            nxt = idx.line_span(line)[1] + 1 - pos
            i = data.find(needle, max(i + 1, nxt))
        pos += CHUNK
    return None


def _backward(idx: logstore.LineIndex, query: str, needle: bytes, from_line: int,
              stopped: Callable[[], bool]) -> int | None:
    lo, hi, over = idx.dropped_bytes, idx.end_offset, len(needle) - 1
    pos = idx.line_span(from_line)[0]  # before the current line
    while pos > lo and not stopped():
        s = max(lo, pos - CHUNK)
        data = idx.read(s, min(hi, pos + over)).lower()
        i = data.rfind(needle)
        while i != -1:
            line = line_of(idx, s + i)
            if line < from_line and _line_matches(idx, line, query):
                return line
            lstart = idx.line_span(line)[0] - s
            if lstart <= 0:
                break
            i = data.rfind(needle, 0, lstart)
        pos = s
    return None


def _line_matches(idx: logstore.LineIndex, line: int, query: str) -> bool:
    raw = idx.read_raw_lines(line, 1, max_bytes=1 << 20)
    return bool(raw) and query.lower() in render_raw_line(raw[0]).plain.lower()


def line_of(idx: logstore.LineIndex, offset: int) -> int:
    """Line number holding absolute byte ``offset`` (binary search on the index)."""
    lo, hi = 0, idx.line_count - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if idx.line_span(mid)[0] <= offset:
            lo = mid
        else:
            hi = mid - 1
    return lo


@dataclass(slots=True)
class Finder:
    """The pane's find: what is looked for, the line it landed on, and the steps pressed while
    a find runs (True: forward): each starts where the one before it landed, so three quick
    Downs move three matches."""

    text: str = ""
    match_line: int | None = None
    pending: tuple[int, str] | None = None  # (the pane's generation, query) the reader works on
    steps: list[bool] = field(default_factory=list)

    def begin(self, generation: int, query: str, forward: bool) -> bool:
        """A find of `query` is asked for: False when one for it runs (the step is queued)."""
        if self.pending == (generation, query):
            self.steps.append(forward)
            return False
        self.steps = []
        self.pending = (generation, query)
        return True

    def done(self) -> list[bool]:
        """The running find answered: the steps queued meanwhile."""
        self.pending = None
        steps, self.steps = self.steps, []
        return steps
