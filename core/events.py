"""The durable event log (`<home>/events.jsonl`) and per-consumer cursors.

Supervisors append one JSON object a line with O_APPEND. A consumer's cursor is kept in
`<home>/cursors/<consumer>` and advanced under an exclusive lock, so each consumer sees every
event exactly once across processes and restarts.

A cursor is bound to the identity of the file it points into: its inode and a generation (a
digest of the file's first line; every line holds a microsecond timestamp and a session id, so
a new file's first line differs even when the inode number is reused). When events.jsonl is
deleted or rotated, the new file is read from its start, however large it has grown. A cursor
that cannot be read is reported: it is reset to the end of the log and the consumer gets one
``cursor_reset`` event saying how many events it may have missed.

Every file here is opened with O_NOFOLLOW: a symbolic link planted as events.jsonl or as a
cursor is refused with an error, never written through.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from .paths import ensure_private_dir, open_nofollow

AGENT_TYPES = ("completion", "watch_match")
# every type a supervisor or a cursor records (``events --type`` names one of them)
EVENT_TYPES = ("started", "exited", "completion", "watch_match", "awaiting_input", "quiet", "cursor_reset")
LOG_NAME = "events.jsonl"
_CONSUMER = re.compile(r"[A-Za-z0-9_@-][A-Za-z0-9_.@-]{0,63}")
CONSUMER_RULE = "consumer must be 1-64 characters of letters, digits, _ . @ - (not starting with a dot)"
_CURSOR_WIDTH = 96  # cursors are rewritten in place at a fixed width: no stale tail ever remains
_HEAD_BYTES = 4096


def valid_consumer(name: object) -> bool:
    return isinstance(name, str) and bool(_CONSUMER.fullmatch(name))


def check_consumer(name: object) -> str:
    """`name` if it is a valid consumer name (also a safe file name), else ValueError."""
    if not isinstance(name, str) or not valid_consumer(name):
        raise ValueError(CONSUMER_RULE)
    return name


def drain(home: Path, consumer: str, types: tuple[str, ...] | None = AGENT_TYPES,
          only_new: bool = False) -> list[dict[str, Any]]:
    """Events not yet seen by `consumer`, oldest first; only `types` are returned (None: all).

    A consumer seen for the first time starts at the beginning of the log, or, with `only_new`,
    at its end (a dashboard that wants the events from now on).
    """
    check_consumer(consumer)
    cursors = ensure_private_dir(home / "cursors")
    fd = open_nofollow(cursors / consumer, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        raw = os.pread(fd, _CURSOR_WIDTH, 0)
        with _open_log(home) as log:
            ident = log.identity()
            size = log.size()
            start, notices = _start(raw, ident, size, only_new, consumer, log)
            if only_new and not raw.strip():
                _store(fd, ident, size)
                return []
            lines, end = log.read_from(start)
            if end != start or raw[:2] != b"2 " or notices:
                _store(fd, ident, end)
        found = [e for e in (parse_line(line) for line in lines) if e and (types is None or e.get("type") in types)]
        return notices + found
    finally:
        os.close(fd)


def _start(raw: bytes, ident: tuple[int, str], size: int, only_new: bool, consumer: str,
           log: _Log) -> tuple[int, list[dict[str, Any]]]:
    """Where `consumer` resumes in the log with identity `ident`, and any notice about it."""
    text = raw.strip()
    if not text:
        return (size if only_new else 0), []
    cursor = parse_cursor(text)
    if cursor is None:  # damaged: resume at the end, and say how much may have been skipped
        notice = {"type": "cursor_reset", "consumer": consumer, "reason": "the cursor file was unreadable",
                  "missed_events_at_most": log.count_lines(size), "missed_bytes_at_most": size}
        return size, [notice]
    ino, gen, offset = cursor
    if offset > size:
        return 0, []  # the log was replaced by a shorter one: read the new one from its start
    if ino is None or (ino, gen) == ident:  # legacy cursors (a bare offset) carry no identity
        return offset, []
    return 0, []  # another file (deleted, rotated, recreated): all of it is new to this consumer


def parse_cursor(text: bytes) -> tuple[int | None, str | None, int] | None:
    """(inode, generation, offset) of a cursor; inode None for a legacy bare offset; None if damaged."""
    parts = text.split()
    try:
        if len(parts) == 1 and parts[0].isdigit():
            return None, None, int(parts[0])
        if len(parts) == 4 and parts[0] == b"2" and parts[1].isdigit() and parts[3].isdigit():
            return int(parts[1]), parts[2].decode("ascii"), int(parts[3])
    except (ValueError, UnicodeDecodeError):
        pass
    return None


def _store(fd: int, ident: tuple[int, str], offset: int) -> None:
    ino, gen = ident
    os.pwrite(fd, f"2 {ino} {gen} {offset}".encode().ljust(_CURSOR_WIDTH - 1) + b"\n", 0)


class _Log:
    """events.jsonl opened once (without following a link): identity, size and reads of one file."""

    def __init__(self, fd: int | None) -> None:
        self.fd = fd

    def __enter__(self) -> _Log:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            os.close(self.fd)

    def size(self) -> int:
        return os.fstat(self.fd).st_size if self.fd is not None else 0

    def identity(self) -> tuple[int, str]:
        """(inode, generation): the generation is a digest of the first line ('-' before it exists)."""
        if self.fd is None:
            return 0, "-"
        head = os.pread(self.fd, _HEAD_BYTES, 0)
        end = head.find(b"\n")
        gen = hashlib.blake2b(head[:end], digest_size=8).hexdigest() if end >= 0 else "-"
        return os.fstat(self.fd).st_ino, gen

    def read_from(self, start: int) -> tuple[list[bytes], int]:
        """Complete lines from `start` to the current end, and the offset after the last one."""
        if self.fd is None:
            return [], start
        data = os.pread(self.fd, max(0, self.size() - start), start)
        complete = data.rfind(b"\n") + 1
        return data[:complete].splitlines(), start + complete

    def count_lines(self, end: int) -> int:
        count, pos = 0, 0
        while pos < end and self.fd is not None:
            chunk = os.pread(self.fd, min(1 << 20, end - pos), pos)
            if not chunk:
                break
            count += chunk.count(b"\n")
            pos += len(chunk)
        return count


def _open_log(home: Path) -> _Log:
    try:
        return _Log(open_nofollow(home / LOG_NAME, os.O_RDONLY))
    except FileNotFoundError:
        return _Log(None)


def forget(home: Path, consumer: str) -> None:
    """Drop a consumer's cursor (a dashboard's own consumer, when it closes)."""
    check_consumer(consumer)
    (home / "cursors" / consumer).unlink(missing_ok=True)  # unlink removes a link, never its target


def _cursor_files(home: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(home / "cursors") as entries:
            return [e for e in entries if valid_consumer(e.name)]
    except FileNotFoundError:
        return []


def prune_cursors(home: Path, older_than: float) -> int:
    """Delete cursors not used since `older_than` (epoch seconds); return how many."""
    removed = 0
    for entry in _cursor_files(home):
        try:
            if entry.stat(follow_symlinks=False).st_mtime < older_than:
                os.unlink(entry.path)
                removed += 1
        except FileNotFoundError:
            pass
    return removed


def undelivered_sessions(home: Path, types: tuple[str, ...] = AGENT_TYPES) -> set[str]:
    """Jobs with `types` events that some known consumer (one with a cursor) has not drained yet."""
    entries = _cursor_files(home)
    if not entries:
        return set()
    with _open_log(home) as log:
        ident, size = log.identity(), log.size()
        start = size
        for entry in entries:
            try:
                fd = open_nofollow(entry.path, os.O_RDONLY)
            except OSError:
                continue
            try:
                cursor = parse_cursor(os.pread(fd, _CURSOR_WIDTH, 0).strip())
            finally:
                os.close(fd)
            if cursor is None:
                continue  # a damaged cursor resumes at the end: nothing is pending for it
            ino, gen, offset = cursor
            same = offset <= size and (ino is None or (ino, gen) == ident)
            start = min(start, offset if same else 0)
        lines, _ = log.read_from(start)
    pending = set()
    for line in lines:
        event = parse_line(line)
        if event and event.get("type") in types and isinstance(event.get("session_id"), str):
            pending.add(event["session_id"])
    return pending


def parse_line(line: bytes) -> dict[str, Any] | None:
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None


def append(home: Path, event: dict[str, Any]) -> None:
    fd = open_nofollow(home / LOG_NAME, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        os.write(fd, (json.dumps(event) + "\n").encode())
    finally:
        os.close(fd)
