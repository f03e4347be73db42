"""Filter a job's whole on-disk log: the lines matching a regex, with N lines of context.

:func:`filter_log` runs in a worker thread and streams its results: it reads the log in 1 MiB
chunks of whole lines, removes escape sequences from each chunk (one C-speed regex pass; line
ends are kept, so line numbers stay those of the log pane) and hands the chunk to the user's
pattern (:class:`~hermes_procs.core.registry.userregex.UserRegex`: RE2, or Python's re in a worker
process with a deadline), which names the matching lines, so a 500 MB log is scanned at disk
speed and never held in memory, and a pattern that backtracks without end stops the scan with
"pattern took too long" instead of freezing the dashboard.  Context lines are read afterwards
by line number through the same :class:`~hermes_procs.core.registry.logstore.LineIndex`.  At most
:data:`MAX_ROWS` rows and :data:`MAX_ROW_BYTES` bytes of lines are kept.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hermes_procs.core.registry import logstore
from hermes_procs.core.registry.userregex import PatternError, UserRegex
from hermes_procs.core.supervisor.text import looks_plain, strip_ansi

__all__ = ["MAX_ROWS", "MAX_ROW_BYTES", "FilterProgress", "FilterRow", "filter_log"]

MAX_ROWS = 200_000
MAX_ROW_BYTES = 64 << 20  # raw bytes of the rows kept (a line is read up to 64 KiB)
_CHUNK = 1 << 20


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
    with pattern:
        _scan(logstore.LineIndex(jobdir), pattern, context, report, cancelled)


def _scan(index: logstore.LineIndex, pattern: UserRegex, context: int,
          report: Callable[[FilterProgress], object], cancelled: Callable[[], bool]) -> None:
    start, end = index.dropped_bytes, index.end_offset
    pos, line_base, matches, emitted_to = start, 0, 0, -1
    carry = b""
    rows_total = rows_bytes = 0
    while pos < end and not cancelled():
        data = carry + index.read(pos, min(end, pos + _CHUNK))
        pos = min(end, pos + _CHUNK)
        cut = len(data) if pos >= end else data.rfind(b"\n") + 1
        if cut == 0 and len(data) < 16 * _CHUNK:
            carry = data  # one long line: read on
            continue
        block, carry = data[:cut], data[cut:]
        try:
            found = _matching_lines(block, pattern, line_base)
        except PatternError as exc:
            report(FilterProgress([], pos - start, end - start, matches, done=True, error=exc))
            return
        line_base += block.count(b"\n")
        matches += len(found)
        rows, emitted_to = _with_context(index, found, context, emitted_to, MAX_ROWS - rows_total,
                                         MAX_ROW_BYTES - rows_bytes)
        rows_total += len(rows)
        rows_bytes += sum(len(row.raw) for row in rows)
        truncated = rows_total >= MAX_ROWS or rows_bytes >= MAX_ROW_BYTES
        report(FilterProgress(rows, pos - start, end - start, matches, done=truncated, truncated=truncated))
        if truncated:
            return
    report(FilterProgress([], pos - start, end - start, matches, done=True))


def _matching_lines(block: bytes, pattern: UserRegex, line_base: int) -> list[int]:
    """Line numbers (from ``line_base``) of the lines of ``block`` where ``pattern`` matches
    the text (decoded, escape sequences removed)."""
    text = block if looks_plain(block) else strip_ansi(block.decode("utf-8", "replace"))
    return [line_base + i for i in pattern.lines(text)]


def _with_context(index: logstore.LineIndex, found: list[int], context: int, emitted_to: int,
                  room: int, room_bytes: int) -> tuple[list[FilterRow], int]:
    """The rows for ``found`` matches: each with ``context`` lines before and after, ranges
    merged, nothing before ``emitted_to`` repeated, within ``room`` rows and ``room_bytes``
    bytes.  Returns the rows and the last line."""
    rows: list[FilterRow] = []
    size = 0
    hits = set(found)
    last = index.line_count - 1
    for line in found:
        first = max(emitted_to + 1, line - context)
        stop = min(last, line + context)
        if first > stop:
            continue
        raws = index.read_raw_lines(first, stop - first + 1, max_bytes=64 << 10)
        for i, raw in enumerate(raws):
            n = first + i
            rows.append(FilterRow(n, raw, n in hits, gap=(i == 0 and emitted_to >= 0 and n > emitted_to + 1)))
            size += len(raw)
        emitted_to = stop
        if len(rows) >= room or size >= room_bytes:
            return rows[:room], emitted_to
    return rows, emitted_to
