"""Keeping the event log small: what `prune` does to `events.jsonl` and to consumers' cursors.

Supervisors append about 300 bytes per job to `<home>/events.jsonl` and nothing else ever
shortens it, so a busy home's log grew without end (120 MB: a new consumer's first drain read
all of it). :func:`compact` rewrites it with

* every event some consumer (a cursor of this file) has not read yet: the whole log after the
  cursor furthest behind, byte for byte;
* before that point, only the events of jobs that still exist (retention keeps them: a
  consumer that comes later still finds what the job table shows) and of the last
  KEEP_RECENT seconds;

and moves each cursor to the same event in the new file (its inode and generation, and its
offset less what was dropped before it), so every consumer still gets each event exactly once.
The slow part (reading and filtering the old log) runs without any lock; only the swap holds
`events.lock` exclusively: the lines appended meanwhile are copied over, the new file is
renamed into place and the cursors rewritten, while drains and appenders wait (supervisors do
not wait: they retry). A consumer that read below the point chosen meanwhile (a new one) makes
this prune skip the compaction; the next one does it.

:func:`stale_consumers` names the cursors of per-process consumers whose process is gone (a
dashboard's ``dashboard-PID``, a Hermes adapter's ``compat-PID-HEX``, left by a crash): they
would hold the log's start back until retention's age limit.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Collection
from pathlib import Path

from ..supervisor import proctree, stats
from . import events
from .paths import open_nofollow
from .processes import boot_time

KEEP_RECENT = 3600.0  # seconds of events kept whoever has read them
_SESSION = re.compile(rb'"session_id": "(proc_[0-9a-f]{12})"')
_TIME = re.compile(rb'"t": ([0-9]+(?:\.[0-9]+)?)')
_PER_PROCESS = re.compile(r"(?:dashboard|compat)-([0-9]+)(?:-[0-9a-f]+)?")
_CHUNK = 1 << 20


def compact(home: Path, keep_sessions: Collection[str], now: float | None = None) -> int:
    """Rewrite events.jsonl as described above; return the bytes dropped (0: left as it was)."""
    with events.open_log(home) as log:
        if log.fd is None:
            return 0
        ident, size = log.identity(), log.size()
        floor = _floor(home, ident, size)
        if floor == 0:
            return 0
        cutoff = (time.time() if now is None else now) - KEEP_RECENT
        prefix = _kept_prefix(log.fd, floor, set(keep_sessions), cutoff)
        if len(prefix) == floor:
            return 0
        return _swap(home, log, ident, floor, prefix)


def _floor(home: Path, ident: tuple[int, str], size: int) -> int:
    """The offset of the cursor furthest behind in this file (`size` when there is none)."""
    floor = size
    for offset in _cursor_offsets(home, ident, size).values():
        floor = min(floor, offset)
    return floor


def _cursor_offsets(home: Path, ident: tuple[int, str], size: int) -> dict[str, int]:
    """consumer -> offset, for the cursors that point into this file (legacy bare offsets too;
    a cursor stored while the log was empty has read nothing of it: offset 0)."""
    found = {}
    for entry in events.cursor_files(home):
        cursor = events.read_cursor(entry.path)
        if cursor is None or cursor[2] > size:
            continue
        if cursor[0] is None or cursor[:2] == ident:
            found[entry.name] = cursor[2]
        elif cursor[1] == "-" and cursor[2] == 0:
            found[entry.name] = 0
    return found


def _kept_prefix(fd: int, floor: int, keep: set[str], cutoff: float) -> bytes:
    """The lines before `floor` to keep: of a job in `keep`, or written after `cutoff`."""
    out = []
    pos, carry = 0, b""
    while pos < floor:
        read = os.pread(fd, min(_CHUNK, floor - pos), pos)
        if not read:
            break
        pos += len(read)
        data = carry + read
        cut = data.rfind(b"\n") + 1
        carry = data[cut:]
        for line in data[:cut].split(b"\n")[:-1]:
            session = _SESSION.search(line)
            stamp = _TIME.search(line)
            if (session and session.group(1).decode() in keep) or (stamp and float(stamp.group(1)) >= cutoff):
                out.append(line + b"\n")
    return b"".join(out)


def _swap(home: Path, log: events.EventLog, ident: tuple[int, str], floor: int, prefix: bytes) -> int:
    """Under events.lock: the new file (prefix + the log from `floor`), renamed into place, and
    every cursor of the old file moved to it. Returns the bytes dropped."""
    tmp = home / f".{events.LOG_NAME}.{os.getpid()}.tmp"
    with events.locked(home, exclusive=True):
        size = log.size()
        offsets = _cursor_offsets(home, ident, size)
        if not _still_the_log(home, log) or any(offset < floor for offset in offsets.values()):
            return 0  # replaced meanwhile (another prune), or a consumer read below the point chosen
        tmp.unlink(missing_ok=True)
        out = open_nofollow(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        try:
            os.write(out, prefix)
            _copy(log.fd, out, floor, size)
            os.fsync(out)
            os.rename(tmp, home / events.LOG_NAME)
            with events.open_log(home) as new:
                new_ident = new.identity()
            for consumer, offset in offsets.items():
                _move_cursor(home, consumer, new_ident, offset - floor + len(prefix))
            _copy(log.fd, out, size, None)  # lines a supervisor of an older version added meanwhile
        finally:
            os.close(out)
            tmp.unlink(missing_ok=True)
    return floor - len(prefix)


def _still_the_log(home: Path, log: events.EventLog) -> bool:
    """Whether `log` (an open file) is still what events.jsonl names."""
    try:
        return log.fd is not None and os.stat(home / events.LOG_NAME, follow_symlinks=False).st_ino == \
            os.fstat(log.fd).st_ino
    except FileNotFoundError:
        return False


def _copy(src: int | None, dst: int, start: int, end: int | None) -> None:
    """Bytes [start, end) of `src` (end None: to its end) appended to `dst`."""
    pos = start
    while src is not None and (end is None or pos < end):
        data = os.pread(src, _CHUNK if end is None else min(_CHUNK, end - pos), pos)
        if not data:
            return
        os.write(dst, data)
        pos += len(data)


def _move_cursor(home: Path, consumer: str, ident: tuple[int, str], offset: int) -> None:
    try:
        fd = open_nofollow(home / "cursors" / consumer, os.O_WRONLY | os.O_NONBLOCK)  # never blocks on a FIFO
    except OSError:
        return  # removed meanwhile (forget): nothing to move
    try:
        events.store_cursor(fd, ident, offset)
    finally:
        os.close(fd)


def stale_consumers(home: Path) -> list[str]:
    """Cursors of per-process consumers whose process has gone: none runs with that pid, or the
    one that does started after the cursor was last written (the pid was reused)."""
    boot = boot_time()
    stale = []
    for entry in events.cursor_files(home):
        match = _PER_PROCESS.fullmatch(entry.name)
        if match is None:
            continue
        try:
            written = entry.stat(follow_symlinks=False).st_mtime
        except FileNotFoundError:
            continue
        ticks = proctree.start_ticks(int(match.group(1)))
        if ticks is None or boot + ticks / stats.CLOCK_TICKS > written + 1.0:
            stale.append(entry.name)
    return stale
