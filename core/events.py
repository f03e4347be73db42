"""The durable event log (`<home>/events.jsonl`) and per-consumer cursors.

Supervisors append one JSON object a line with O_APPEND. A consumer's cursor is the byte offset
it has consumed, kept in `<home>/cursors/<consumer>` and advanced under an exclusive lock, so
each consumer sees every event exactly once across processes and restarts.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from pathlib import Path

AGENT_TYPES = ("completion", "watch_match")
_CONSUMER = re.compile(r"[A-Za-z0-9_.@-]{1,64}")


def valid_consumer(name: object) -> bool:
    return isinstance(name, str) and bool(_CONSUMER.fullmatch(name))


def drain(home: Path, consumer: str, types: tuple[str, ...] | None = AGENT_TYPES,
          only_new: bool = False) -> list[dict]:
    """Events not yet seen by `consumer`, oldest first; only `types` are returned (None: all).

    A consumer seen for the first time starts at the beginning of the log, or, with `only_new`,
    at its end (a dashboard that wants the events from now on).
    """
    cursors = home / "cursors"
    cursors.mkdir(mode=0o700, exist_ok=True)
    fd = os.open(cursors / consumer, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        raw = os.pread(fd, 64, 0).strip()
        if not raw and only_new:
            os.pwrite(fd, str(_size(home / "events.jsonl")).encode().ljust(20), 0)
            return []
        start = int(raw) if raw.isdigit() else 0
        lines, end = _read_from(home / "events.jsonl", start)
        if end != start:
            text = str(end).encode()
            os.pwrite(fd, text.ljust(20), 0)
        return [e for e in (parse_line(line) for line in lines) if e and (types is None or e.get("type") in types)]
    finally:
        os.close(fd)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def forget(home: Path, consumer: str) -> None:
    """Drop a consumer's cursor (a dashboard's own consumer, when it closes)."""
    (home / "cursors" / consumer).unlink(missing_ok=True)


def prune_cursors(home: Path, older_than: float) -> int:
    """Delete cursors not used since `older_than` (epoch seconds); return how many."""
    removed = 0
    for path in (home / "cursors").glob("*"):
        try:
            if path.stat().st_mtime < older_than:
                path.unlink()
                removed += 1
        except FileNotFoundError:
            pass
    return removed


def _read_from(path: Path, start: int) -> tuple[list[bytes], int]:
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            if start > size:  # the log was replaced: start over
                start = 0
            fh.seek(start)
            data = fh.read(size - start)
    except FileNotFoundError:
        return [], start
    complete = data.rfind(b"\n") + 1
    return data[:complete].splitlines(), start + complete


def parse_line(line: bytes) -> dict | None:
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def append(home: Path, event: dict) -> None:
    fd = os.open(home / "events.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, (json.dumps(event) + "\n").encode())
    finally:
        os.close(fd)
