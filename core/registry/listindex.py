"""The index of finished jobs (`<home>/index.jsonl`): what makes a cold `list()` cheap.

A finished job's `list()` row never changes (its supervisor is gone and its exit is recorded),
so the first registry that builds one appends it here, one JSON line per job. A cold `list()`
then reads this one file and the jobs folder instead of three JSON files, a log tail and /proc
for every job.

The index is only a cache checked against the jobs folder: a row whose folder is gone (pruned)
is ignored; a job folder without a row is loaded as before and its row appended; a damaged or
missing index just means more loading, and it is rewritten (compacted, atomically) once it holds
many more lines than jobs. Writers append whole lines with one O_APPEND write; several processes
may do so at once, and a duplicate line costs nothing (same job, same row).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

NAME = "index.jsonl"
COMPACT_SLACK = 200  # rewrite when the index holds this many more lines than live rows


def read(home: Path) -> tuple[dict[str, dict[str, Any]], int]:
    """The rows in the index by session id, and how many lines it holds (unparsable ones too)."""
    try:
        with os.fdopen(os.open(home / NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC), "rb") as fh:
            lines = fh.read().splitlines()
    except OSError:  # missing, or a planted symbolic link (never followed): load the jobs instead
        return {}, 0
    rows: dict[str, dict[str, Any]] = {}
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:
            continue  # a torn or damaged line: that job is loaded again and re-indexed
        if isinstance(row, dict) and isinstance(row.get("session_id"), str):
            rows[row["session_id"]] = row
    return rows, len(lines)


def append(home: Path, rows: list[dict[str, Any]]) -> None:
    """Add finished jobs' rows: one write of whole lines, so concurrent writers never interleave."""
    if not rows:
        return
    data = "".join(json.dumps(row, separators=(",", ":")) + "\n" for row in rows).encode()
    try:
        fd = os.open(home / NAME, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return  # best effort: the index is a cache
    try:
        os.write(fd, data)
    except OSError:
        pass
    finally:
        os.close(fd)


def rewrite(home: Path, rows: list[dict[str, Any]]) -> None:
    """Replace the index by exactly `rows` (a new file renamed over the old one)."""
    tmp = home / f".{NAME}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write("".join(json.dumps(row, separators=(",", ":")) + "\n" for row in rows).encode())
        os.replace(tmp, home / NAME)
    except OSError:
        tmp.unlink(missing_ok=True)


def needs_compaction(lines: int, live: int) -> bool:
    return lines > live + COMPACT_SLACK
