"""Regex search over a job's whole retained log at the speed of grep: a 500 MB log is never
in memory, and no Python code runs per line that does not match.

Lines are numbered as `read_log` numbers them (line 0 = the first retained line; split on
``\\n`` in the raw bytes; each line's text has ANSI stripped and ``\\r`` redraws collapsed), so
a match's ``line_no`` is the ``offset`` to read around it. :func:`blocks` reads the log in
blocks of whole lines (1 MiB) through one pinned snapshot; :func:`block_hits` gives each block
to the pattern once (core/registry/userregex.py): a plain block (printable ASCII, tabs and line
ends only: its bytes are its text) is searched as it is by RE2 over the whole block (a literal
run of the pattern first, from its rarest byte); a block of coloured text (UTF-8, CSI
sequences: colours, erases, cursor moves; a terminal's ``\r\n`` line ends) by the pattern's
literal first, with those sequences allowed between its characters, converting only the lines
that hold it and the few that are more than that (core/registry/colourfind.py); a PTY job's
plain lines, for a pattern without a literal, with each line's last ``\r`` taken out; any
other block as its text. Line numbers come from
the counts of line ends kept next to the log (core/supervisor/linecounts.py), only for the blocks that
hold a match to return; the lines around a match are read from its block (or from the log, at
a block's edge). The dashboard's ``&`` filter runs on the same functions.

Every answer is bounded: at most `limit` matches, each line (match or context) cut to
LINE_CHARS characters, and MAX_ANSWER_CHARS characters of lines in all; the matches past that
are counted but not returned, and the collector says it was capped.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from ..supervisor.linecounts import LineCounts
from ..supervisor.text import looks_plain, to_text
from . import logstore
from .colournotes import ColourNotes
from .userregex import UserRegex

CHUNK = 1 << 20
LINE_CHARS = 2000  # a line in a result is cut to this many characters
CAPPED_NOTE = ("answer capped at {limit:,} characters of lines: {shown} of {total} matching lines returned; "
               "ask for fewer (limit), less context or a narrower pattern, or read around a match "
               "with read_log(offset=line_no)")


class Collector:
    """The matches of one answer, within `limit` matches and `max_chars` characters of lines."""

    def __init__(self, limit: int, max_chars: int = logstore.MAX_ANSWER_CHARS) -> None:
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


class Block(NamedTuple):
    """``data[:end]`` holds whole lines of the log from absolute offset ``start`` (the last block
    of the log may end without a line end; a line over LONG_LINE comes in pieces); bytes after
    ``end`` are the start of the next line."""

    start: int
    data: bytes
    end: int

    def line_end(self, pos: int) -> int:
        """Where the line starting at ``pos`` ends (its ``\\n``, or ``end``)."""
        stop = self.data.find(b"\n", pos, self.end)
        return self.end if stop < 0 else stop


LONG_LINE = 4 * CHUNK  # a line longer than this is searched in pieces of this size


def blocks(layout: Any, start: int | None = None, stop: int | None = None) -> Iterator[Block]:
    """The retained log of a pinned snapshot (logstore.snapshot) in blocks of whole lines; from
    `start` to `stop` (absolute offsets: a line's start, a line's end) when given."""
    pos = layout.base if start is None else max(start, layout.base)
    stop, size = layout.end if stop is None else min(stop, layout.end), CHUNK
    while pos < stop:
        data = layout.read(pos, min(stop, pos + size))
        if not data:
            return
        end = len(data) if pos + len(data) >= stop else data.rfind(b"\n") + 1
        if end == 0:
            if size < LONG_LINE:
                size *= 2  # a long line: read on
                continue
            end = len(data)
        yield Block(pos, data, end)
        pos, size = pos + end, CHUNK


def block_hits(regex: UserRegex, block: Block, plain: bool = False,
               limit: int | None = None, notes: ColourNotes | None = None) -> tuple[list[int], int]:
    """Offsets in ``block.data`` where the lines whose text (text.to_text) matches start, at most
    ``limit`` of them, and how many more lines match; ``plain``: the block's bytes are known
    to be plain (the line counts say so); ``notes``: the log's clean coloured blocks, read
    and added to."""
    data, end = block.data, block.end
    if plain or looks_plain(data):  # an ordinary log's bytes are its text
        return regex.line_starts(data, end, limit)
    span = (block.start, block.start + end)
    known = notes is not None and notes.clean(*span)
    candidates, clean = regex.coloured_lines(data, end, known)
    if clean and notes is not None:
        notes.note(*span)
    if candidates is not None:  # coloured text: only the lines that hold the pattern's literal
        return _matching(regex, block, candidates, limit)
    if b"\r\n" in data:  # a terminal's lines (a PTY job): plain once each line's last \r is gone
        text = data[:end].replace(b"\r\n", b"\n")  # ~0.5 GB/s
        if looks_plain(text):
            found, more = regex.line_starts(text, len(text), limit)
            return _raw_starts(data, text, found), more
    return _text_hits(regex, data[:end], limit)


def _matching(regex: UserRegex, block: Block, starts: list[int], limit: int | None) -> tuple[list[int], int]:
    """Of the lines of the block at ``starts``, those whose text matches (at most ``limit``),
    and how many more."""
    found: list[int] = []
    more = 0
    for start in starts:
        text = to_text(block.data[start:block.line_end(start)]).encode("utf-8", "surrogatepass")
        if regex.line_starts(text, len(text), 1)[0]:
            if limit is None or len(found) < limit:
                found.append(start)
            else:
                more += 1
    return found, more


def _text_hits(regex: UserRegex, raw: bytes, limit: int | None) -> tuple[list[int], int]:
    """block_hits of a block (``raw``, whole lines) matched as its text."""
    text = to_text(raw).encode("utf-8", "surrogatepass")  # the same lines: no conversion joins or splits them
    found, more = regex.line_starts(text, len(text), limit)
    if raw and not raw.endswith(b"\n") and text[-1:] in (b"", b"\n") and regex.first("") is not None:
        if limit is None or len(found) < limit:  # a last line that is empty as text (only escapes)
            found.append(len(text))
        else:
            more += 1
    return _raw_starts(raw, text, found), more


def _raw_starts(raw: bytes, text: bytes, found: list[int]) -> list[int]:
    """The starts in ``raw`` of the lines that start at ``found`` in ``text`` (the same lines
    converted: line ``i`` of one is line ``i`` of the other)."""
    starts, pos, line, counted = [], 0, 0, 0
    for hit in found:
        want = line + text.count(b"\n", counted, hit)
        counted = hit
        while line < want:
            pos, line = raw.find(b"\n", pos) + 1, line + 1
        starts.append(pos)
    return starts


def hit_lines(counts: LineCounts, block: Block, hits: list[int]) -> Iterator[tuple[int, int]]:
    """``(line number, offset in the block)`` of each hit, counted from the block's first line."""
    line, counted = counts.newlines(block.start), 0
    for pos in hits:
        line += block.data.count(b"\n", counted, pos)
        counted = pos
        yield line, pos


def lines_before(layout: Any, counts: LineCounts, block: Block, pos: int, line: int, n: int) -> list[bytes]:
    """The ``n`` raw lines before the one at ``pos`` (fewer at the log's start), from the block,
    or the log before it."""
    data, out = block.data, list[bytes]()
    while len(out) < n and pos > 0:
        start = data.rfind(b"\n", 0, pos - 1) + 1
        out.append(data[start:pos - 1])
        pos = start
    out.reverse()
    missing = min(n, line) - len(out)
    if missing > 0:
        out[:0] = _read_lines(layout, counts, line - len(out) - missing, missing)
    return out


def lines_after(layout: Any, counts: LineCounts, block: Block, stop: int, line: int, n: int) -> list[bytes]:
    """The ``n`` raw lines after the one ending at ``stop`` (line ``line``), from the block, or
    the log after it."""
    data, end, out, pos = block.data, block.end, list[bytes](), stop + 1
    while len(out) < n and pos < end:
        nxt = block.line_end(pos)
        out.append(data[pos:nxt])
        pos = nxt + 1
    if len(out) < n and block.start + end < layout.end:
        out += _read_lines(layout, counts, line + 1 + len(out), n - len(out))
    return out


def _read_lines(layout: Any, counts: LineCounts, first: int, count: int) -> list[bytes]:
    return [layout.read(start, min(stop, start + LONG_LINE)) for start, stop in counts.spans(first, count)]


def search_log(jobdir: Path, regex: UserRegex, context: int, out: Collector,
               extra: dict[str, Any] | None = None) -> int:
    """Add the matches of one job's log to `out` ({**extra, "line_no", "line", "before", "after"});
    return how many lines match in all."""
    total = 0
    notes = ColourNotes(jobdir)
    with logstore.snapshot(jobdir) as layout:
        counts = logstore.line_counts(jobdir, layout)
        for block in blocks(layout):
            room = 0 if out.full else out.limit - len(out.matches)
            hits, more = block_hits(regex, block, plain=counts.plain(block.start, block.start + block.end),
                                    limit=room, notes=notes)
            total += len(hits) + more
            if hits:
                _collect(layout, counts, block, hits, context, out, extra or {})
    notes.save()
    return total


def _collect(layout: Any, counts: LineCounts, block: Block, hits: list[int], context: int, out: Collector,
             extra: dict[str, Any]) -> None:
    for line, pos in hit_lines(counts, block, hits):
        if out.full:
            return
        stop = block.line_end(pos)
        before = lines_before(layout, counts, block, pos, line, context)
        after = lines_after(layout, counts, block, stop, line, context)
        taken = out.take([to_text(raw) for raw in (block.data[pos:stop], *before, *after)])
        if taken is None:
            return
        out.matches.append({**extra, "line_no": line, "line": taken[0], "before": taken[1:1 + len(before)],
                            "after": taken[1 + len(before):]})
