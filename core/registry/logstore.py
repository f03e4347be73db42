"""Reading a job's on-disk output log: tails, byte ranges, line ranges, rotation.

Layout of a job folder (see docs/internals.md, "Log cap")::

    output.log.1     the older segment, present after the first rotation
    output.log       the current segment, append-only
    logstate.json    {"dropped_bytes": N, "first_segment": INODE, "output_dropped": M} once
                     output has been dropped by the cap (or could not be stored: M)

Absolute byte offsets never go back: the first retained byte (the first byte of
``output.log.1``, or of ``output.log`` when there is no older segment) has absolute offset
``dropped_bytes``.  Every function here takes absolute offsets and clamps them to what is
retained.

A read pins the segments it uses: it opens them, checks that they are the ones
``logstate.json`` describes (``first_segment`` is the inode of ``output.log.1``; a rotation under
way does not match yet) and reads through those descriptors, so a rotation during the read
changes nothing it sees.  A reader never fails because the log rotated.

Lines are split on ``b"\\n"`` in the raw bytes (so ``\\r\\n`` is one line break); each line is
then turned into text with :func:`hermes_procs.core.supervisor.text.to_text`.  When the cap dropped older
output, line 0 is the first retained (possibly partial) line.  A trailing line without a
newline yet counts as a line.

:func:`read_lines` (``read_log``) reads no more than the lines it returns: line numbers come
from the counts of line ends kept in ``lines.idx`` next to the log (core/supervisor/linecounts.py), so
the last 200 lines of a 500 MB log cost a seek and a few KB, in any process, once any reader
has counted the log.  :class:`LineIndex` (the dashboard's, for scrolling) keeps the start
offset of every 64th line in an ``array('q')`` (about 1 MB for 6 M lines) and extends itself
incrementally as the log grows.  Nothing here decodes or holds a whole log in memory: scans
read 1 MiB chunks and any one returned line is capped at 64 KiB of raw bytes.

Stdlib only.
"""

from __future__ import annotations

import json
import os
import time
from _thread import RLock  # threading's RLock; `threading` costs a CLI query ~1.5 ms
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from itertools import accumulate
from pathlib import Path
from typing import Any, NamedTuple

from ..supervisor.linecounts import LineCounts
from ..supervisor.text import to_text

__all__ = [
    "LINE_CAP",
    "LOG_NAME",
    "MAX_ANSWER_CHARS",
    "OLD_LOG_NAME",
    "STATE_NAME",
    "LineIndex",
    "dropped_bytes",
    "line_counts",
    "read_bytes",
    "read_lines",
    "segments",
    "snapshot",
    "tail_bytes",
    "tail_span",
    "total_bytes",
]

LOG_NAME = "output.log"
OLD_LOG_NAME = "output.log.1"
STATE_NAME = "logstate.json"

CHUNK = 1 << 20  # scan granularity
LINE_CAP = 64 * 1024  # raw bytes of one line turned into text by read_lines
MAX_ANSWER_CHARS = 1 << 20  # characters of lines in one answer (read_lines, a search)
_CUT_MARK = 40  # characters of the marker a line cut at LINE_CAP gets, at most
CHECKPOINT_EVERY = 64  # LineIndex keeps the start of every Nth line


# --- layout --------------------------------------------------------------------------


def segments(jobdir: Path) -> list[Path]:
    """The existing log segments of a job folder, oldest first."""
    jobdir = Path(jobdir)
    return [p for p in (jobdir / OLD_LOG_NAME, jobdir / LOG_NAME) if p.is_file()]


def _state(jobdir: Path) -> dict[str, Any]:
    try:
        with open(Path(jobdir) / STATE_NAME, "rb") as f:
            state = json.loads(f.read(1 << 16))
    except (OSError, ValueError):
        return {}
    return state if isinstance(state, dict) else {}


def _count(state: dict[str, Any], key: str) -> int:
    value = state.get(key, 0)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def dropped_bytes(jobdir: Path) -> int:
    """Bytes dropped by the log cap (absolute offset of the first retained byte); 0 if unknown."""
    return _count(_state(jobdir), "dropped_bytes")


def output_dropped(jobdir: Path) -> int:
    """Bytes of output the supervisor could not store (a full disk); 0 if none or unknown."""
    return _count(_state(jobdir), "output_dropped")


class _Rotated(Exception):
    """A segment changed identity under us (the log rotated): reload and retry."""


class _Seg(NamedTuple):
    path: Path
    start: int  # absolute offset of its first byte
    size: int
    ino: int
    fd: int = -1  # an open descriptor of the segment while the layout is pinned


PIN_ATTEMPTS = 40  # consistent snapshots tried (a few ms apart) before taking a best effort


class _Layout:
    """A consistent snapshot of the retained segments."""

    __slots__ = ("base", "end", "segs", "verified")

    def __init__(self, base: int, segs: list[_Seg], verified: bool = False) -> None:
        self.base = base
        self.segs = segs
        self.end = segs[-1].start + segs[-1].size if segs else base
        self.verified = verified  # logstate.json named the first segment, and it matched

    @staticmethod
    def _stat(paths: Iterable[Path], base: int) -> list[_Seg]:
        segs: list[_Seg] = []
        pos = base
        for p in paths:
            try:
                st = os.stat(p)
            except OSError:
                continue
            segs.append(_Seg(p, pos, st.st_size, st.st_ino))
            pos += st.st_size
        return segs

    @classmethod
    def of_jobdir(cls, jobdir: Path) -> _Layout:
        """A pinned snapshot of the job's segments (close() it when done)."""
        for attempt in range(PIN_ATTEMPTS):
            layout = cls._pin(jobdir)
            if layout is not None:
                return layout
            time.sleep(0.0002 * attempt)
        return cls._open(jobdir, _state(jobdir))  # e.g. logstate.json could not be written (disk full)

    @classmethod
    def _open(cls, jobdir: Path, state: dict[str, Any]) -> _Layout:
        """The segments there now, opened (each read then sees one file, whatever renames follow)."""
        base = _count(state, "dropped_bytes")
        segs: list[_Seg] = []
        for path in (jobdir / OLD_LOG_NAME, jobdir / LOG_NAME):
            try:
                fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
            except OSError:
                continue
            st = os.fstat(fd)
            start = segs[-1].start + segs[-1].size if segs else base
            segs.append(_Seg(path, start, st.st_size, st.st_ino, fd))
        return cls(base, segs)

    @classmethod
    def _pin(cls, jobdir: Path) -> _Layout | None:
        """The segments, if no rotation ran while they were opened (None: try again)."""
        state = _state(jobdir)
        layout = cls._open(jobdir, state)
        segs = layout.segs
        first = state.get("first_segment")
        consistent = (_state(jobdir) == state and cls._same_files(segs)
                      and (first is None or (bool(segs) and segs[0].path.name == OLD_LOG_NAME
                                             and segs[0].ino == first)))
        if consistent:
            layout.verified = first is not None
            return layout
        layout.close()
        return None

    def close(self) -> None:
        """Let go of the pinned descriptors; later reads go by path (and may see a rotation)."""
        for s in self.segs:
            if s.fd >= 0:
                os.close(s.fd)
        self.segs = [s._replace(fd=-1) for s in self.segs]

    def __enter__(self) -> _Layout:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - a finaliser, possibly at interpreter exit
            pass

    @classmethod
    def of_paths(cls, paths: Sequence[Path], base: int = 0) -> _Layout:
        return cls(base, cls._stat(paths, base))

    @staticmethod
    def _same_files(segs: list[_Seg]) -> bool:
        for s in segs:
            try:
                if os.stat(s.path).st_ino != s.ino:
                    return False
            except OSError:
                return False
        return True

    def read(self, start: int, end: int | None = None) -> bytes:
        """Bytes [start, end) by absolute offsets, clamped to this snapshot."""
        if end is None or end > self.end:
            end = self.end
        start = max(start, self.base)
        if start >= end:
            return b""
        out: list[bytes] = []
        for s in self.segs:
            lo = max(start, s.start)
            hi = min(end, s.start + s.size)
            if lo >= hi:
                continue
            if s.fd >= 0:
                data = os.pread(s.fd, hi - lo, lo - s.start)
                if len(data) != hi - lo:  # cannot happen: segments only grow
                    raise _Rotated(str(s.path))
                out.append(data)
                continue
            try:
                with open(s.path, "rb") as f:
                    if os.fstat(f.fileno()).st_ino != s.ino:
                        raise _Rotated(str(s.path))
                    f.seek(lo - s.start)
                    data = f.read(hi - lo)
            except FileNotFoundError:
                raise _Rotated(str(s.path)) from None
            if len(data) != hi - lo:  # truncated under us
                raise _Rotated(str(s.path))
            out.append(data)
        return out[0] if len(out) == 1 else b"".join(out)


def snapshot(jobdir: Path) -> _Layout:
    """The job's retained log as it is now, pinned (rotations after this change nothing it
    reads): ``base``, ``end``, ``read(start, end)``; close it (or use it with ``with``)."""
    return _Layout.of_jobdir(Path(jobdir))


def line_counts(jobdir: Path | None, layout: _Layout) -> LineCounts:
    """Line numbers over ``layout`` from the job's lines.idx (core/supervisor/linecounts.py); ``jobdir``
    None: none stored."""
    return LineCounts(jobdir, layout.base, layout.end, [s.start for s in layout.segs], layout.read)


def total_bytes(jobdir: Path) -> int:
    """Absolute end offset: dropped bytes + sizes of the retained segments."""
    layout = _Layout.of_jobdir(Path(jobdir))
    layout.close()
    return layout.end


def read_bytes(jobdir: Path, start: int, end: int | None = None) -> bytes:
    """Bytes between absolute offsets ``start`` and ``end`` (None: to the end), clamped to
    what is retained."""
    layout = _Layout.of_jobdir(Path(jobdir))
    try:
        return layout.read(start, end)
    finally:
        layout.close()


def tail_bytes(jobdir: Path, n: int) -> bytes:
    """The last ``n`` retained bytes (across segments), reading nothing else."""
    return tail_span(jobdir, n)[1]


def tail_span(jobdir: Path, n: int) -> tuple[int, bytes]:
    """The last ``n`` retained bytes and the absolute offset of their first byte."""
    never_rotated = _unrotated_tail(jobdir, n)
    if never_rotated is not None:
        return never_rotated
    layout = _Layout.of_jobdir(Path(jobdir))
    try:
        start = max(layout.base, layout.end - max(0, n))
        return start, layout.read(start, layout.end)
    finally:
        layout.close()


def _unrotated_tail(jobdir: Path, n: int) -> tuple[int, bytes] | None:
    """tail_span of a log that never rotated (no output.log.1, no logstate.json: its offsets
    are absolute), from one descriptor: what list() pays for most jobs. None otherwise.

    The checks come after the open: a rotation before them is seen (the slow path runs); after
    them, the descriptor still holds the first segment, whose offsets stay right."""
    folder = os.fspath(jobdir)
    try:
        fd = os.open(f"{folder}/{LOG_NAME}", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if os.path.lexists(f"{folder}/{OLD_LOG_NAME}") or os.path.lexists(f"{folder}/{STATE_NAME}"):
            return None
        size = os.fstat(fd).st_size
        start = max(0, size - max(0, n))
        return start, os.pread(fd, size - start, start) if size > start else b""
    finally:
        os.close(fd)


# --- line index ----------------------------------------------------------------------


class _Cursor:
    """Forward newline search over a layout with one buffered 1 MiB window."""

    __slots__ = ("buf", "layout", "limit", "off")

    def __init__(self, layout: _Layout, limit: int) -> None:
        self.layout = layout
        self.limit = limit  # do not look past this absolute offset
        self.buf = b""
        self.off = 0

    def find_nl(self, pos: int) -> int:
        """Absolute offset of the first b"\\n" at or after ``pos`` (before ``limit``), or -1."""
        while pos < self.limit:
            if not (self.off <= pos < self.off + len(self.buf)):
                self.off = pos
                self.buf = self.layout.read(pos, min(pos + CHUNK, self.limit))
                if not self.buf:
                    return -1
            i = self.buf.find(b"\n", pos - self.off)
            if i != -1:
                return self.off + i
            pos = self.off + len(self.buf)
        return -1


class LineIndex:
    """Line-offset index over a job's log (or an explicit list of segment files).

    ``LineIndex(jobdir)`` follows the job folder's segments and ``logstate.json``;
    ``LineIndex([path, ...], base=0)`` indexes fixed files as one stream.  Call
    :meth:`refresh` to take in bytes appended since; a rotation that dropped bytes (or any
    file replaced or truncated) rebuilds the index.  Thread-safe.

    Line ``i`` is the raw bytes between the ``i``-th and ``i+1``-th ``b"\\n"`` (line 0 starts at
    the first retained byte); a trailing line with no newline yet counts.
    """

    def __init__(self, source: Path | str | Sequence[Path | str], base: int = 0) -> None:
        self._lock = RLock()
        if isinstance(source, (str, os.PathLike)):
            self._jobdir: Path | None = Path(source)
            self._paths: tuple[Path, ...] = ()
        else:
            self._jobdir = None
            self._paths = tuple(Path(p) for p in source)
        self._fixed_base = base
        self._reset(base)
        self.refresh()

    # state
    def _reset(self, base: int) -> None:
        self._base = base
        self._layout = _Layout(base, [])
        self._files: list[tuple[int, int]] = []  # (ino, size) of the segments scanned
        self._cps = array("q", [base])  # start offset of line k*CHECKPOINT_EVERY
        self._scanned = base  # absolute offset indexed so far
        self.bytes_scanned = 0  # bytes read to build the index, over its whole life
        self._newlines = 0
        self._last_start = base  # start of the line after the last newline

    def _load(self) -> _Layout:
        if self._jobdir is not None:
            return _Layout.of_jobdir(self._jobdir)
        return _Layout.of_paths(self._paths, self._fixed_base)

    def _compatible(self, layout: _Layout) -> bool:
        if layout.base != self._base or layout.end < self._scanned:
            return False
        new = [(s.ino, s.size) for s in layout.segs]
        if len(new) < len(self._files):
            return False
        for (ino, size), (nino, nsize) in zip(self._files, new[:len(self._files)]):
            if ino != nino or nsize < size:
                return False
        # an older segment may not grow once a newer one exists (offsets would shift)
        k = max(0, len(self._files) - 1)
        older = zip(self._files[:k], new[:k])
        return all(nsize == size for (_ino, size), (_nino, nsize) in older)

    def _rotation_in_flight(self, layout: _Layout) -> bool:
        """The supervisor renamed output.log to output.log.1 but has not yet written the new
        dropped_bytes to logstate.json (it does so right after): the offsets would be off."""
        return (
            self._jobdir is not None
            and not layout.verified
            and len(self._files) == 2
            and layout.base == self._base
            and bool(layout.segs)
            and layout.segs[0].ino == self._files[1][0]
        )

    def refresh(self) -> bool:
        """Index bytes appended since the last call; rebuild after a rotation.  Returns True
        when anything changed."""
        with self._lock:
            for _ in range(5):
                layout = self._load()
                for _wait in range(50):
                    if not self._rotation_in_flight(layout):
                        break
                    layout.close()
                    time.sleep(0.001)
                    layout = self._load()
                if not self._compatible(layout):
                    self._reset(layout.base)
                    changed = True
                else:
                    changed = layout.end != self._scanned
                if self._layout is not layout:
                    self._layout.close()
                self._layout = layout
                self._files = [(s.ino, s.size) for s in layout.segs]
                try:
                    self._scan(layout)
                except _Rotated:
                    self._reset(layout.base)
                    continue
                return changed
            raise RuntimeError("log keeps changing under the reader")

    def release(self) -> None:
        """Close the descriptors that pin the indexed segments (the next refresh pins again);
        a long-lived index should not keep a rotated-out segment's disk space in use."""
        with self._lock:
            self._layout.close()

    def _scan(self, layout: _Layout) -> None:
        every = CHECKPOINT_EVERY
        cps = self._cps
        pos = self._scanned
        nl = self._newlines
        last_start = self._last_start
        while pos < layout.end:
            chunk = layout.read(pos, min(pos + CHUNK, layout.end))
            if not chunk:
                break
            m = chunk.count(b"\n")
            if m:
                k = len(cps) * every - nl  # 1-based index in this chunk of the next checkpoint line
                if k <= m:
                    acc = list(accumulate(map(len, chunk.split(b"\n"))))
                    # line nl+k starts right after the k-th newline of the chunk
                    cps.extend(pos + acc[j - 1] + j for j in range(k, m + 1, every))
                last_start = pos + chunk.rfind(b"\n") + 1
                nl += m
            pos += len(chunk)
            self.bytes_scanned += len(chunk)
            # commit progress chunk by chunk (a _Rotated later keeps a valid prefix)
            self._scanned, self._newlines, self._last_start = pos, nl, last_start

    # queries
    @property
    def dropped_bytes(self) -> int:
        return self._base

    @property
    def end_offset(self) -> int:
        """Absolute offset up to which the index has scanned."""
        return self._scanned

    @property
    def line_count(self) -> int:
        return self._newlines + (1 if self._scanned > self._last_start else 0)

    def __len__(self) -> int:
        return self.line_count

    def _line_start(self, cur: _Cursor, i: int) -> int:
        j = i // CHECKPOINT_EVERY
        pos = self._cps[j]
        for _ in range(i - j * CHECKPOINT_EVERY):
            nlpos = cur.find_nl(pos)
            if nlpos == -1:  # cannot happen for i < line_count
                return self._scanned
            pos = nlpos + 1
        return pos

    def spans(self, first: int, count: int) -> list[tuple[int, int]]:
        """``(start, end)`` absolute offsets of raw lines ``first .. first+count-1`` (clamped);
        ``end`` excludes the ``\\n``.  Reads at most a few MiB beyond what the lines hold."""
        with self._lock:
            total = self.line_count
            first = max(0, first)
            count = min(count, total - first)
            if count <= 0:
                return []
            cur = _Cursor(self._layout, self._scanned)
            pos = self._line_start(cur, first)
            out: list[tuple[int, int]] = []
            for _ in range(count):
                nlpos = cur.find_nl(pos)
                end = self._scanned if nlpos == -1 else nlpos
                out.append((pos, end))
                pos = end + 1
            return out

    def line_at(self, offset: int) -> int:
        """The line holding absolute byte ``offset`` (clamped: 0 before the first retained
        byte, ``line_count`` from the end of the indexed bytes on)."""
        with self._lock:
            if offset >= self._scanned:
                return self.line_count
            offset = max(offset, self._base)
            j = bisect_right(self._cps, offset) - 1
            start = self._cps[j]
            return j * CHECKPOINT_EVERY + self._layout.read(start, offset).count(b"\n")

    def line_span(self, i: int) -> tuple[int, int]:
        """``(start, end)`` absolute offsets of raw line ``i`` (``end`` excludes the ``\\n``)."""
        sp = self.spans(i, 1)
        if not sp:
            raise IndexError(f"line {i} out of range (0..{self.line_count - 1})")
        return sp[0]

    def read(self, start: int, end: int) -> bytes:
        """Bytes [start, end) by absolute offsets from the indexed snapshot."""
        with self._lock:
            return self._layout.read(start, min(end, self._scanned))

    def read_raw_lines(self, first: int, count: int, max_bytes: int | None = None) -> list[bytes]:
        """Raw bytes (without the ``\\n``) of lines ``first .. first+count-1``.  With
        ``max_bytes``, only the first ``max_bytes`` of each line are read."""
        with self._lock:
            out = []
            for s, e in self.spans(first, count):
                if max_bytes is not None:
                    e = min(e, s + max_bytes)
                out.append(self._layout.read(s, e))
            return out


# --- read_lines ----------------------------------------------------------------------


def _cut_utf8_tail(b: bytes) -> bytes:
    """Drop an incomplete multi-byte UTF-8 sequence at the end of ``b``."""
    for i in range(1, min(4, len(b)) + 1):
        c = b[-i]
        if c < 0x80:
            return b
        if c >= 0xC0:
            need = 2 if c < 0xE0 else 3 if c < 0xF0 else 4
            return b if i >= need else b[:-i]
    return b


def _line_text(read: Callable[[int, int], bytes], start: int, end: int, cap: int) -> str:
    n = end - start
    if n <= cap:
        return to_text(read(start, end))
    # An oversized line.  If it is redrawn with \r (a progress bar), its end is what counts;
    # otherwise keep its beginning.
    tail = read(end - cap, end)
    body = tail.rstrip(b"\r")
    k = body.find(b"\r")
    if k != -1:
        kept = body[k + 1:]
        return f"[… {n - len(kept)} bytes truncated] " + to_text(kept)
    head = _cut_utf8_tail(read(start, start + cap))
    return to_text(head) + f"… [{n - len(head)} bytes truncated]"


def _line_texts(read: Callable[[int, int], bytes], spans: list[tuple[int, int]]) -> list[str]:
    """The text of consecutive lines: one read and one conversion when none is over LINE_CAP
    (converting lines at once gives the lines of converting each: no escape sequence spans a
    line end), else line by line."""
    if spans and spans[-1][1] - spans[0][0] <= 8 << 20 and all(e - s <= LINE_CAP for s, e in spans):
        texts = to_text(read(spans[0][0], spans[-1][1])).split("\n")
        if len(texts) == len(spans):
            return texts
    return [_line_text(read, s, e, LINE_CAP) for s, e in spans]


def _human_bytes(n: int) -> str:
    if n >= 1 << 30:
        return f"{n / (1 << 30):.1f} GiB"
    if n >= 1 << 20:
        return f"{n / (1 << 20):.1f} MiB"
    if n >= 1 << 10:
        return f"{n / (1 << 10):.1f} KiB"
    return f"{n} bytes"


def read_lines(jobdir: Path, offset: int | None = None, limit: int = 200,
               since_offset: int | None = None, max_chars: int = MAX_ANSWER_CHARS) -> dict[str, Any]:
    """A window of text lines of a job's log (the API's ``read_log`` semantics, docs/api.md).

    ``offset=None``: the last ``limit`` lines; ``offset=N``: lines ``N .. N+limit-1`` (0 = the
    first retained line).  ``since_offset`` (with ``offset=None``): none of the lines before
    the one holding that absolute byte offset; at most ``max_chars`` characters of lines
    (MAX_ANSWER_CHARS; the agent faces ask for fewer).  Returns ``{"output": str, "total_lines": int, "showing": str,
    "dropped_bytes": int}``; ``output`` is the lines joined with ``\\n`` after
    :func:`~hermes_procs.core.supervisor.text.to_text`; a line longer than ``LINE_CAP`` raw bytes is cut
    with a ``[… N bytes truncated]`` marker.  A missing log reads as empty.
    """
    jobdir = Path(jobdir)
    limit = max(0, int(limit))
    with _Layout.of_jobdir(jobdir) as layout:  # pinned: a rotation meanwhile changes nothing here
        counts = line_counts(jobdir, layout)
        total = counts.line_count
        dropped = layout.base
        first = max(0, total - limit) if offset is None else max(0, int(offset))
        if since_offset is not None and offset is None:
            first = max(first, counts.line_at(since_offset))
        spans = counts.spans(first, limit)
        kept = _within_answer(spans, from_end=offset is None, budget=max_chars)
        if offset is None:
            first += len(spans) - len(kept)
        texts = _line_texts(layout.read, kept)
    count = len(texts)
    left_out = len(spans) - len(kept)
    if total == 0:
        showing = "no output yet" if dropped == 0 else "no lines retained"
    elif count == 0:
        showing = (
            f"no lines at offset {first} (0 lines shown of {total})" if limit else f"0 lines shown of {total}"
        )
    else:
        showing = f"lines {first}-{first + count - 1} of {total}"
    if dropped:
        showing += f" ({_human_bytes(dropped)} of older output dropped by the log cap)"
    note = ""
    if left_out:
        where = (f"before them (read them with offset={first - left_out})" if offset is None
                 else f"after them (read on with offset={first + count})")
        note = f"answer capped at {max_chars:,} characters: {left_out} more lines {where}"
        showing += f"; {note}"
    result: dict[str, Any] = {"output": "\n".join(texts), "total_lines": total, "showing": showing,
                              "dropped_bytes": dropped}
    if left_out:
        result.update(capped=True, first_line=first, shown_lines=count, left_out=left_out, note=note)
    return result


def _within_answer(spans: list[tuple[int, int]], from_end: bool, budget: int) -> list[tuple[int, int]]:
    """The lines (byte spans) of ``spans`` whose text fits ``budget`` characters, counted from the
    end (a tail) or the start; at least one. A line's text is at most its bytes (escapes removed,
    UTF-8 decoded) or LINE_CAP and the cut marker."""
    order = range(len(spans) - 1, -1, -1) if from_end else range(len(spans))
    taken = 0
    for i in order:
        start, end = spans[i]
        budget -= min(end - start, LINE_CAP + _CUT_MARK) + 1
        if budget < 0 and taken:
            break
        taken += 1
    return spans[len(spans) - taken:] if from_end else spans[:taken]
