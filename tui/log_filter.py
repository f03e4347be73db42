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

With ``follow``, a running job's new lines are filtered as they come (as ``less`` does with
``&`` and ``F``): every :data:`FOLLOW_EVERY` seconds the lines written since are scanned, each
once it is whole; following ends when the job has ended and its last line is scanned, or when
the log is rotated (the first retained line, and so every line number, moved).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes_procs.core.registry import logstore, search
from hermes_procs.core.registry.colournotes import ColourNotes
from hermes_procs.core.registry.userregex import PatternError, UserRegex
from hermes_procs.core.supervisor.linecounts import LineCounts

__all__ = ["MAX_ROWS", "MAX_ROW_BYTES", "FilterProgress", "FilterRow", "filter_log"]

MAX_ROWS = 200_000
MAX_ROW_BYTES = 64 << 20  # raw bytes of the rows kept (a line is read up to 64 KiB)
FOLLOW_EVERY = 0.3  # seconds between two looks at a followed log


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
    following: bool = False  # done with the log so far; new lines are filtered as they come
    rotated: bool = False  # following stopped: the log was rotated


@dataclass(slots=True)
class _Scan:
    """Where a scan is, across the looks at a followed log."""

    base: int  # the first retained byte when the scan began
    pos: int  # scanned up to here
    stop: int = 0  # to scan up to here this time
    matches: int = 0
    done: tuple[int, int] = (-1, -1)  # _with_context's (last line emitted, last line owed)
    rows: int = 0
    row_bytes: int = 0

    def progress(self, rows: list[FilterRow], **flags: Any) -> FilterProgress:
        return FilterProgress(rows, self.pos - self.base, self.stop - self.base, self.matches, **flags)


def filter_log(jobdir: Path, pattern: UserRegex, context: int, report: Callable[[FilterProgress], object],
               cancelled: Callable[[], bool], follow: bool = False) -> None:
    """Scan the log of ``jobdir`` as it is now (``follow``: and what the job writes after, until
    it has ended); call ``report`` after every chunk. The pattern's worker process (if it has
    one) is closed at the end."""
    notes = ColourNotes(jobdir)
    with pattern:
        scan: _Scan | None = None
        while not cancelled():
            ended = not follow or _ended(jobdir)  # before the look: then it is the whole log
            with logstore.snapshot(jobdir) as layout:
                if scan is None:
                    scan = _Scan(layout.base, layout.base)
                elif layout.base != scan.base:
                    report(scan.progress([], done=True, rotated=True))
                    return
                scan.stop = layout.end if ended else _whole_lines_end(layout, scan.pos)
                going = _scan(_Lines(layout, logstore.line_counts(jobdir, layout)), pattern, context, scan, notes,
                              report, cancelled)
                notes.save()
                if not going:
                    return
            report(scan.progress([], done=True, following=not ended))
            if ended or not _wait_for_more(jobdir, layout.end, cancelled):
                return


def _whole_lines_end(layout: Any, pos: int) -> int:
    """The end of the last whole line after ``pos`` (``pos``: none yet, or none ends in the
    last MiB, which is not read again at every look): a running job's last line may be half
    written."""
    end = layout.end
    while end > max(pos, layout.end - (1 << 20)):
        start = max(pos, end - (64 << 10))
        cut = layout.read(start, end).rfind(b"\n")
        if cut >= 0:
            return start + cut + 1
        end = start
    return pos


def _wait_for_more(jobdir: Path, size: int, cancelled: Callable[[], bool]) -> bool:
    """Sleep until the log holds more than ``size`` bytes or the job has ended (True), or the
    scan is cancelled (False)."""
    while not cancelled():
        time.sleep(FOLLOW_EVERY)
        if logstore.total_bytes(jobdir) > size or _ended(jobdir):
            return True
    return False


def _ended(jobdir: Path) -> bool:
    """The job has ended: its exit record is there (its log will not grow)."""
    return (jobdir / "exit.json").exists()


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


def _scan(lines: _Lines, pattern: UserRegex, context: int, scan: _Scan, notes: ColourNotes,
          report: Callable[[FilterProgress], object], cancelled: Callable[[], bool]) -> bool:
    """Scan from ``scan.pos`` to ``scan.stop``, reporting each block's rows; False when the
    scan has stopped for good (cancelled, the pattern failed, the rows are at their cap)."""
    layout, counts = lines.layout, lines.counts
    for block in search.blocks(layout, scan.pos, scan.stop):
        if cancelled():
            return False
        pos = block.start + block.end
        try:
            hits, _ = search.block_hits(pattern, block, plain=counts.plain(block.start, pos), notes=notes)
        except PatternError as exc:
            report(scan.progress([], done=True, error=exc))
            return False
        scan.pos = pos
        found = [line for line, _ in search.hit_lines(counts, block, hits)]
        scan.matches += len(found)
        block_last = counts.newlines(pos) - (block.data[block.end - 1:block.end] == b"\n")
        rows, scan.done = _with_context(lines, found, context, scan.done, block_last, MAX_ROWS - scan.rows,
                                        MAX_ROW_BYTES - scan.row_bytes)
        scan.rows += len(rows)
        scan.row_bytes += sum(len(row.raw) for row in rows)
        truncated = scan.rows >= MAX_ROWS or scan.row_bytes >= MAX_ROW_BYTES
        report(scan.progress(rows, done=truncated, truncated=truncated))
        if truncated:
            return False
    return True


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
