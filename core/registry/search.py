"""Regex search over a job's whole retained log, streamed: a 500 MB log is never in memory.

Lines are numbered as `read_log` numbers them (line 0 = the first retained line; split on
``\\n`` in the raw bytes; each line's text has ANSI stripped and ``\\r`` redraws collapsed), so
a match's ``line_no`` is the ``offset`` to read around it. The log is read in blocks of whole
lines (1 MiB); each block's text goes to the pattern once (core/registry/userregex.py: RE2, or Python's
re in a worker process with a deadline), which names the lines that match. A block of plain
ASCII (no escape sequence, no control character) goes to the engine as it is; only a block with
matches still to report is split into lines, so past `limit` the cost of a plain log is one RE2
pass over its bytes.

Every answer is bounded: at most `limit` matches, each line (match or context) cut to
LINE_CHARS characters, and MAX_ANSWER_CHARS characters of lines in all; the matches past that
are counted but not returned, and the collector says it was capped.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..supervisor.text import looks_plain, to_text
from . import logstore
from .userregex import UserRegex

CHUNK = 1 << 20
LINE_CHARS = 2000  # a line in a result is cut to this many characters
MAX_ANSWER_CHARS = 1 << 20  # characters of lines in one answer, over every match and job
CAPPED_NOTE = ("answer capped at {limit:,} characters of lines: {shown} of {total} matching lines returned; "
               "ask for fewer (limit), less context or a narrower pattern, or read around a match "
               "with read_log(offset=line_no)")


class Collector:
    """The matches of one answer, within `limit` matches and `max_chars` characters of lines."""

    def __init__(self, limit: int, max_chars: int = MAX_ANSWER_CHARS) -> None:
        self.matches: list[dict[str, Any]] = []
        self.limit = limit
        self.left = max_chars
        self.max_chars = max_chars
        self.capped = False

    @property
    def full(self) -> bool:
        return self.capped or len(self.matches) >= self.limit

    def take(self, lines: list[str]) -> list[str] | None:
        """`lines` cut to LINE_CHARS each, charged to the budget; None (and capped) when they do not fit."""
        cut = [line[:LINE_CHARS] for line in lines]
        size = sum(map(len, cut))
        if size > self.left:
            self.capped = True
            return None
        self.left -= size
        return cut

    def note(self, total: int) -> str:
        return CAPPED_NOTE.format(limit=self.max_chars, shown=len(self.matches), total=total)


def search_log(jobdir: Path, regex: UserRegex, context: int, out: Collector,
               extra: dict[str, Any] | None = None) -> int:
    """Add the matches of one job's log to `out` ({**extra, "line_no", "line", "before", "after"});
    return how many lines match in all."""
    before: deque[str] = deque(maxlen=context)
    waiting: list[dict[str, Any]] = []  # matches still collecting their `after` lines
    total = 0
    line_no = 0
    for raw in _blocks(jobdir):
        text = None if looks_plain(raw) else to_text(raw)  # an ordinary log's bytes are its text
        hits = regex.lines(raw if text is None else text)
        total += len(hits)
        collect = bool(hits) and not out.full
        if waiting or collect:
            lines = (to_text(raw) if text is None else text).split("\n")
            if raw.endswith(b"\n"):
                lines.pop()
            waiting = _fill_after(waiting, lines, context, out)
            if collect:
                waiting += _new_matches(hits, lines, before, context, line_no, out, extra or {})
            if context and not out.full:
                before.extend(lines[-context:])
            line_no += len(lines)
        elif not out.full:  # past that, lines need no number and no context
            if context:
                before.extend(to_text(line) for line in raw.rsplit(b"\n", context + 1)[-context - 1:-1])
            line_no += raw.count(b"\n")
    return total


def _fill_after(waiting: list[dict[str, Any]], lines: list[str], context: int,
                out: Collector) -> list[dict[str, Any]]:
    """Give the matches of earlier blocks their `after` lines from `lines`; those still short stay."""
    still = []
    for match in waiting:
        after = out.take(lines[:context - len(match["after"])])
        if after is None:
            continue
        match["after"] += after
        if len(match["after"]) < context:
            still.append(match)
    return still


def _new_matches(hits: list[int], lines: list[str], before: deque[str], context: int, base: int,
                 out: Collector, extra: dict[str, Any]) -> list[dict[str, Any]]:
    """The matches at `hits` (indices into `lines`) that fit in `out`; returns those whose
    `after` lines run into the next block."""
    waiting = []
    for i in hits:
        if out.full:
            break
        earlier = lines[max(0, i - context):i]
        if len(earlier) < context and before:
            earlier = list(before)[len(earlier) - context:] + earlier
        after = lines[i + 1:i + 1 + context]
        taken = out.take([lines[i], *earlier, *after])
        if taken is None:
            break
        match = {**extra, "line_no": base + i, "line": taken[0], "before": taken[1:1 + len(earlier)],
                 "after": taken[1 + len(earlier):]}
        out.matches.append(match)
        if len(match["after"]) < context:
            waiting.append(match)
    return waiting


def _blocks(jobdir: Path) -> Iterator[bytes]:
    """The retained log in pieces of whole lines (the last piece may end without a line end).
    Converting a block to text at once gives the lines of converting each line: no escape
    sequence a line end can be part of survives the conversion."""
    offset = logstore.dropped_bytes(jobdir)
    end = logstore.total_bytes(jobdir)
    carry = b""
    while offset < end:
        data = logstore.read_bytes(jobdir, offset, min(end, offset + CHUNK))
        if not data:
            break
        offset += len(data)
        data = carry + data
        cut = data.rfind(b"\n") + 1
        if cut == 0 and len(data) < 4 * CHUNK:  # a very long line: keep reading it
            carry = data
            continue
        carry = data[cut:] if cut else b""
        yield data[:cut] if cut else data
    if carry:
        yield carry
