"""Regex search over a job's whole retained log, streamed: a 500 MB log is never in memory.

Lines are numbered as `read_log` numbers them (line 0 = the first retained line; split on
``\\n`` in the raw bytes; each line's text has ANSI stripped and ``\\r`` redraws collapsed), so
a match's ``line_no`` is the ``offset`` to read around it. The log is read 1 MiB at a time;
a chunk whose text has no match is only counted, so the cost is about one regex pass and one
ANSI strip over the bytes.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from . import logstore
from .text import to_text

CHUNK = 1 << 20
LINE_CHARS = 2000  # a line in a result is cut to this many characters


def compile_pattern(pattern: object) -> re.Pattern[str]:
    """The regex, or ValueError saying what is wrong with it."""
    if not isinstance(pattern, str) or not pattern:
        raise ValueError(f"pattern must be a non-empty regular expression, not {pattern!r}")
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"pattern {pattern!r} is not a valid regular expression ({exc})") from None


def search_log(jobdir: Path, pattern: re.Pattern[str], context: int, limit: int, matches: list[dict[str, Any]]) -> int:
    """Append up to `limit` matches ({"line_no", "line", "before", "after"}) to `matches`;
    return how many lines match in all."""
    anywhere = re.compile(pattern.pattern, pattern.flags | re.MULTILINE)  # ^ and $ at each line of a chunk
    before: deque[str] = deque(maxlen=context)
    waiting: list[dict[str, Any]] = []  # matches still collecting their `after` lines
    total = 0
    line_no = 0
    for chunk in _chunks(jobdir):
        if not waiting and not anywhere.search(to_text(chunk)):
            line_no += chunk.count(b"\n")
            if context:
                before.extend(_text(raw) for raw in chunk.rsplit(b"\n", context + 1)[-context - 1:-1])
            continue
        for raw in chunk.split(b"\n")[:-1] if chunk.endswith(b"\n") else chunk.split(b"\n"):
            line = _text(raw)
            for match in waiting:
                match["after"].append(line)
            waiting = [m for m in waiting if len(m["after"]) < context]
            if pattern.search(line):
                total += 1
                if len(matches) < limit:
                    match = {"line_no": line_no, "line": line, "before": list(before), "after": []}
                    matches.append(match)
                    if context:
                        waiting.append(match)
            before.append(line)
            line_no += 1
    return total


def _text(raw: bytes) -> str:
    return to_text(raw[:logstore.LINE_CAP])[:LINE_CHARS]


def _chunks(jobdir: Path) -> Iterator[bytes]:
    """The retained log in pieces that end at a newline (the last piece may not)."""
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
