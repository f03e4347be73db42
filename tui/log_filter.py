"""Filter a job's whole on-disk log: the lines matching a regex, with N lines of context.

:func:`filter_log` runs in a worker thread and streams its results: it reads the log in 1 MiB
chunks of whole lines, removes escape sequences from each chunk (one C-speed regex pass; line
ends are kept, so line numbers stay those of the log pane) and lets the pattern's
``finditer`` find the matching lines, so a 500 MB log is scanned at disk speed and never held in
memory.  Context lines are read afterwards by line number through the same
:class:`~hermes_procs.core.logstore.LineIndex`.  At most :data:`MAX_ROWS` rows are kept.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hermes_procs.core import logstore
from hermes_procs.core.text import strip_ansi

__all__ = ["MAX_ROWS", "FilterProgress", "FilterRow", "filter_log"]

MAX_ROWS = 200_000
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


def filter_log(jobdir: Path, pattern: re.Pattern[str], context: int,
               report: Callable[[FilterProgress], object], cancelled: Callable[[], bool]) -> None:
    """Scan the log of ``jobdir`` as it is now; call ``report`` after every chunk."""
    index = logstore.LineIndex(jobdir)
    start, end = index.dropped_bytes, index.end_offset
    pos, line_base, matches, emitted_to = start, 0, 0, -1
    carry = b""
    rows_total = 0
    while pos < end and not cancelled():
        data = carry + index.read(pos, min(end, pos + _CHUNK))
        pos = min(end, pos + _CHUNK)
        cut = len(data) if pos >= end else data.rfind(b"\n") + 1
        if cut == 0 and len(data) < 16 * _CHUNK:
            carry = data  # one long line: read on
            continue
        block, carry = data[:cut], data[cut:]
        found = _matching_lines(block, pattern, line_base)
        line_base += block.count(b"\n")
        matches += len(found)
        rows, emitted_to = _with_context(index, found, context, emitted_to, MAX_ROWS - rows_total)
        rows_total += len(rows)
        truncated = rows_total >= MAX_ROWS
        report(FilterProgress(rows, pos - start, end - start, matches, done=truncated, truncated=truncated))
        if truncated:
            return
    report(FilterProgress([], pos - start, end - start, matches, done=True))


def _matching_lines(block: bytes, pattern: re.Pattern[str], line_base: int) -> list[int]:
    """Line numbers (from ``line_base``) of the lines of ``block`` where ``pattern`` matches
    the text (decoded, escape sequences removed)."""
    text = strip_ansi(block.decode("utf-8", "replace"))
    found: list[int] = []
    counted_to, line = 0, line_base
    search = pattern.search
    m = search(text)
    while m is not None:
        line_start = text.rfind("\n", 0, m.start()) + 1
        line += text.count("\n", counted_to, line_start)
        counted_to = line_start
        found.append(line)
        line_end = text.find("\n", m.start())
        if line_end == -1:
            break
        m = search(text, line_end + 1)
    return found


def _with_context(index: logstore.LineIndex, found: list[int], context: int, emitted_to: int,
                  room: int) -> tuple[list[FilterRow], int]:
    """The rows for ``found`` matches: each with ``context`` lines before and after, ranges
    merged, nothing before ``emitted_to`` repeated.  Returns the rows and the last line."""
    rows: list[FilterRow] = []
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
        emitted_to = stop
        if len(rows) >= room:
            return rows[:room], emitted_to
    return rows, emitted_to
