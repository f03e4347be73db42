"""Filter a job's whole on-disk log: the lines matching a regex, with N lines of context.

:func:`filter_log` runs in a worker thread and streams its results. It runs on the search's
block functions (core/registry/search.py): the log is read in 1 MiB blocks of whole lines
through one pinned snapshot; a plain block goes to the user's pattern
(:class:`~hermes_procs.core.registry.userregex.UserRegex`: RE2 over the whole block, or Python's
re in a worker process with a deadline) as it is, any other as its text, the line as the log
pane shows it and the search matches it (escape sequences removed, ``\r`` redraws collapsed:
text.to_text; line ends kept, so line numbers stay those of the log pane), so a 500 MB log is scanned at
the speed of grep and never held in memory, and a pattern that backtracks without end stops
the scan with "pattern took too long" instead of freezing the dashboard.  Line numbers and
context lines come from the log's line counts (core/supervisor/linecounts.py).  At most
:data:`MAX_ROWS` rows and :data:`MAX_ROW_BYTES` bytes of lines are kept.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_procs.core.registry import logstore, search
from hermes_procs.core.registry.userregex import PatternError, UserRegex
from hermes_procs.core.supervisor.linecounts import LineCounts

__all__ = ["MAX_ROWS", "MAX_ROW_BYTES", "FilterProgress", "FilterRow", "filter_log"]

MAX_ROWS = 200_000
MAX_ROW_BYTES = 64 << 20  # raw bytes of the rows kept (a line is read up to 64 KiB)


@dataclass(frozen=True, slots=True)
class FilterRow:
    line: int  # line number in the log
    raw: bytes
    match: bool  # False: a context line
    gap: bool = False  # lines were skipped before this one (shown as a separator)


@dataclass(frozen=True, slots=True)
class FilterProgress:
    rows: list[FilterRow]  # new rows since the last report
    scanned: int  # bytes scanned so far
    total: int  # bytes to scan
    matches: int  # matching lines so far
    done: bool
    truncated: bool = False
    error: PatternError | None = None  # the scan stopped: the pattern took too long (or its worker failed)


def filter_log(jobdir: Path, pattern: UserRegex, context: int,
               report: Callable[[FilterProgress], object], cancelled: Callable[[], bool]) -> None:
    """Scan the log of ``jobdir`` as it is now; call ``report`` after every chunk. The pattern's
    worker process (if it has one) is closed at the end."""
    with pattern, logstore.snapshot(jobdir) as layout:
        _scan(_Lines(layout, logstore.line_counts(jobdir, layout)), pattern, context, report, cancelled)


class _Lines:
    """The log's lines by number, through one pinned snapshot and its line counts."""

    def __init__(self, layout: Any, counts: LineCounts) -> None:
        self.layout, self.counts = layout, counts

    @property
    def line_count(self) -> int:
        return self.counts.line_count

    def read_raw_lines(self, first: int, count: int, max_bytes: int) -> list[bytes]:
        spans = self.counts.spans(first, count)
        return [self.layout.read(start, min(stop, start + max_bytes)) for start, stop in spans]


def _scan(lines: _Lines, pattern: UserRegex, context: int,
          report: Callable[[FilterProgress], object], cancelled: Callable[[], bool]) -> None:
    layout, counts = lines.layout, lines.counts
    start, end = layout.base, layout.end
    pos, matches, done = start, 0, (-1, -1)
    rows_total = rows_bytes = 0
    for block in search.blocks(layout):
        if cancelled():
            return
        pos = block.start + block.end
        try:
            hits, _ = search.block_hits(pattern, block, plain=counts.plain(block.start, pos))
        except PatternError as exc:
            report(FilterProgress([], pos - start, end - start, matches, done=True, error=exc))
            return
        found = [line for line, _ in search.hit_lines(counts, block, hits)]
        matches += len(found)
        block_last = counts.newlines(pos) - (block.data[block.end - 1:block.end] == b"\n")
        rows, done = _with_context(lines, found, context, done, block_last, MAX_ROWS - rows_total,
                                   MAX_ROW_BYTES - rows_bytes)
        rows_total += len(rows)
        rows_bytes += sum(len(row.raw) for row in rows)
        truncated = rows_total >= MAX_ROWS or rows_bytes >= MAX_ROW_BYTES
        report(FilterProgress(rows, pos - start, end - start, matches, done=truncated, truncated=truncated))
        if truncated:
            return
    report(FilterProgress([], pos - start, end - start, matches, done=True))


def _with_context(index: _Lines, found: list[int], context: int, done: tuple[int, int], block_last: int,
                  room: int, room_bytes: int) -> tuple[list[FilterRow], tuple[int, int]]:
    """The rows for ``found`` matches (the lines of a block that ends at line ``block_last``):
    each with ``context`` lines before and after, ranges merged, within ``room`` rows and
    ``room_bytes`` bytes. ``done`` is (the last line emitted, the last line owed as context
    after an earlier match): rows stop at the block's last line, so a line of the next block
    is emitted once it is known whether it matches. Returns the rows and the new ``done``."""
    rows: list[FilterRow] = []
    size = 0
    hits = set(found)
    emitted_to, owed = done
    last = min(index.line_count - 1, block_last)
    for line in [owed - context, *found]:
        first = max(emitted_to + 1, line - context)
        stop = min(last, line + context)
        owed = max(owed, line + context)
        if first > stop:
            continue
        raws = index.read_raw_lines(first, stop - first + 1, max_bytes=64 << 10)
        for i, raw in enumerate(raws):
            n = first + i
            rows.append(FilterRow(n, raw, n in hits, gap=(i == 0 and emitted_to >= 0 and n > emitted_to + 1)))
            size += len(raw)
        emitted_to = stop
        if len(rows) >= room or size >= room_bytes:
            return rows[:room], (emitted_to, owed)
    return rows, (emitted_to, owed)
