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

A drain returns at most `limit` events (default DRAIN_LIMIT) and reads at most DRAIN_BYTES of
the log; when more remain, the list ends with one ``{"type": "more_events", ...}`` entry and
the next drain goes on from there (nothing is skipped: the cursor stops after the last event
returned). ``prune`` compacts the log (core/registry/events_compact.py): `events.lock` orders that
rewrite against appenders (a shared lock around each append; the supervisor's is
non-blocking and retries later) and drains (a shared lock around each read and cursor update).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .paths import ensure_private_dir, open_nofollow

AGENT_TYPES = ("completion", "watch_match")
# every type a supervisor or a cursor records (``events --type`` names one of them)
EVENT_TYPES = ("started", "exited", "completion", "watch_match", "awaiting_input", "quiet", "cursor_reset")
LOG_NAME = "events.jsonl"
LOCK_NAME = "events.lock"
MORE = "more_events"  # the last entry of a drain that stopped before the end of the log
DRAIN_LIMIT = 1000  # events returned by one drain at most (by default)
DRAIN_BYTES = 4 << 20  # of the log read by one drain at most (whole lines: more for one longer line)
TOUCH_EVERY = 3600.0  # a drain marks its cursor as used (mtime) at least this often: prune keeps it
_CONSUMER = re.compile(r"[A-Za-z0-9_@-][A-Za-z0-9_.@-]{0,63}")
CONSUMER_RULE = "consumer must be 1-64 characters of letters, digits, _ . @ - (not starting with a dot)"
_CURSOR_WIDTH = 96  # cursors are rewritten in place at a fixed width: no stale tail ever remains
_HEAD_BYTES = 4096


class CursorError(ValueError):
    """A consumer's cursor that cannot be used: its name holds something other than a file."""


def valid_consumer(name: object) -> bool:
    return isinstance(name, str) and bool(_CONSUMER.fullmatch(name))


def check_consumer(name: object) -> str:
    """`name` if it is a valid consumer name (also a safe file name), else ValueError."""
    if not isinstance(name, str) or not valid_consumer(name):
        raise ValueError(CONSUMER_RULE)
    return name


def drain(home: Path, consumer: str, types: tuple[str, ...] | None = AGENT_TYPES,
          only_new: bool = False, limit: int = DRAIN_LIMIT) -> list[dict[str, Any]]:
    """Events not yet seen by `consumer`, oldest first; only `types` are returned (None: all).

    A consumer seen for the first time starts at the beginning of the log, or, with `only_new`,
    at its end (a dashboard that wants the events from now on). At most `limit` events are
    returned; when more remain the list ends with a MORE entry (drain again for the rest).
    """
    check_consumer(consumer)
    cursors = ensure_private_dir(home / "cursors")
    fd = _open_cursor(cursors / consumer, os.O_RDWR | os.O_CREAT, consumer)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with locked(home, exclusive=False), open_log(home) as log:
            raw = os.pread(fd, _CURSOR_WIDTH, 0)
            ident = log.identity()
            size = log.size()
            start, notices = _start(raw, ident, size, only_new, consumer, log)
            if only_new and not raw.strip():
                store_cursor(fd, ident, size)
                return []
            found, end, more = _read_events(log, start, size, types, limit)
            if end != start or raw[:2] != b"2 " or notices:
                store_cursor(fd, ident, end)
            elif os.fstat(fd).st_mtime < time.time() - TOUCH_EVERY:
                os.utime(fd)  # still in use: prune removes cursors unused for its retention time
        if more:
            found.append({"type": MORE, "remaining_bytes": size - end,
                          "note": f"more events remain: drain again (at most {limit} per call)"})
        return notices + found
    finally:
        os.close(fd)


def _read_events(log: EventLog, start: int, size: int, types: tuple[str, ...] | None,
                 limit: int) -> tuple[list[dict[str, Any]], int, bool]:
    """Up to `limit` events of `types` from `start` (within DRAIN_BYTES of the log), the offset
    after the last line consumed, and whether complete lines were left for the next drain (an
    unfinished last line, from a full disk, is not "more")."""
    lines, end = log.read_from(start, DRAIN_BYTES)
    cut = size - start > DRAIN_BYTES  # the read stopped before the end of the log
    found: list[dict[str, Any]] = []
    pos = start
    for line in lines:
        pos += len(line) + 1
        event = parse_line(line)
        if event and (types is None or event.get("type") in types):
            found.append(event)
            if len(found) >= limit:
                return found, pos, pos < end or cut
    return found, end, cut


@contextlib.contextmanager
def locked(home: Path, exclusive: bool) -> Iterator[None]:
    """`events.lock` held: shared by drains and appends, exclusive while prune swaps in a
    compacted log. A lock file that cannot be opened (a planted link) only means no lock."""
    try:
        fd = open_nofollow(home / LOCK_NAME, os.O_RDWR | os.O_CREAT)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)


def _start(raw: bytes, ident: tuple[int, str], size: int, only_new: bool, consumer: str,
           log: EventLog) -> tuple[int, list[dict[str, Any]]]:
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


def read_cursor(path: str | Path) -> tuple[int | None, str | None, int] | None:
    """The cursor in a cursor file (as parse_cursor), None when damaged or unreadable."""
    try:
        fd = _open_cursor(Path(path), os.O_RDONLY, Path(path).name)
    except (OSError, CursorError):  # nothing is pending for what is not a cursor
        return None
    try:
        return parse_cursor(os.pread(fd, _CURSOR_WIDTH, 0).strip())
    finally:
        os.close(fd)


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


def store_cursor(fd: int, ident: tuple[int, str], offset: int) -> None:
    """Write a cursor (fixed width, in place) to an open cursor file."""
    ino, gen = ident
    os.pwrite(fd, f"2 {ino} {gen} {offset}".encode().ljust(_CURSOR_WIDTH - 1) + b"\n", 0)


class EventLog:
    """events.jsonl opened once (without following a link): identity, size and reads of one file."""

    def __init__(self, fd: int | None) -> None:
        self.fd = fd

    def __enter__(self) -> EventLog:
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
        import hashlib  # only here: loading it costs a one-shot query more than its answer

        gen = hashlib.blake2b(head[:end], digest_size=8).hexdigest() if end >= 0 else "-"
        return os.fstat(self.fd).st_ino, gen

    def read_from(self, start: int, max_bytes: int | None = None) -> tuple[list[bytes], int]:
        """Complete lines from `start` to the current end (or the last within `max_bytes`, but at
        least one), and the offset after the last one."""
        if self.fd is None:
            return [], start
        size = self.size()
        want = max(0, size - start) if max_bytes is None else min(max(0, size - start), max_bytes)
        data = os.pread(self.fd, want, start)
        while b"\n" not in data and start + len(data) < size:  # one line longer than max_bytes
            more = os.pread(self.fd, max(len(data), 1 << 16), start + len(data))
            if not more:
                break
            data += more
        complete = data.rfind(b"\n") + 1
        return data[:complete].split(b"\n")[:-1], start + complete

    def count_lines(self, end: int) -> int:
        count, pos = 0, 0
        while pos < end and self.fd is not None:
            chunk = os.pread(self.fd, min(1 << 20, end - pos), pos)
            if not chunk:
                break
            count += chunk.count(b"\n")
            pos += len(chunk)
        return count


def open_log(home: Path) -> EventLog:
    try:
        return EventLog(open_nofollow(home / LOG_NAME, os.O_RDONLY))
    except FileNotFoundError:
        return EventLog(None)


def _open_cursor(path: Path, flags: int, consumer: str) -> int:
    """A cursor file's descriptor (never through a link, never blocking on a FIFO); CursorError
    when the name holds a folder, FIFO, socket or device instead."""
    try:
        fd = open_nofollow(path, flags | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno in (errno.EISDIR, errno.ENXIO):
            raise CursorError(_not_a_file(path, consumer)) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise CursorError(_not_a_file(path, consumer))
    return fd


def _not_a_file(path: Path, consumer: str) -> str:
    return f"the cursor of consumer {consumer!r} is not a regular file: {path} (remove it to start over)"


def forget(home: Path, consumer: str) -> None:
    """Drop a consumer's cursor (a dashboard's own consumer, when it closes)."""
    check_consumer(consumer)
    path = home / "cursors" / consumer
    try:
        kind = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not (stat.S_ISREG(kind) or stat.S_ISLNK(kind)):
        raise CursorError(_not_a_file(path, consumer))
    path.unlink(missing_ok=True)  # unlink removes a link, never its target


def cursor_files(home: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(home / "cursors") as entries:
            return [e for e in entries if valid_consumer(e.name)]
    except FileNotFoundError:
        return []


def prune_cursors(home: Path, older_than: float) -> int:
    """Delete cursors (files, or links planted in their place) not used since `older_than`
    (epoch seconds); return how many. Anything else found there is left alone."""
    removed = 0
    for entry in cursor_files(home):
        try:
            if (entry.is_file(follow_symlinks=False) or entry.is_symlink()) \
                    and entry.stat(follow_symlinks=False).st_mtime < older_than:
                os.unlink(entry.path)
                removed += 1
        except FileNotFoundError:
            pass
    return removed


def undelivered_sessions(home: Path, types: tuple[str, ...] = AGENT_TYPES) -> set[str]:
    """Jobs with `types` events that some known consumer (one with a cursor) has not drained yet."""
    entries = cursor_files(home)
    if not entries:
        return set()
    with open_log(home) as log:
        ident, size = log.identity(), log.size()
        start = size
        for entry in entries:
            cursor = read_cursor(entry.path)
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
    with locked(home, exclusive=False):
        fd = open_nofollow(home / LOG_NAME, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            os.write(fd, (json.dumps(event) + "\n").encode())
        finally:
            os.close(fd)
