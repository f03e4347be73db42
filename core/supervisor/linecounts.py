"""Line numbers without a pass over the log: the count of line ends kept next to it.

``read_log`` numbers lines from the first retained one and answers ``total_lines``; a search
gives each match its line number.  Counting the ``\\n`` of a 500 MB log takes ~0.2 s in
Python (``bytes.count`` runs at ~2.5 GB/s here), so the counts are kept in ``lines.idx`` in
the job folder: a 16-byte header, then 16-byte records ``(offset, newlines)``, both unsigned
64-bit little-endian: the number of ``b"\\n"`` between the first record's offset (the
origin, newlines 0) and ``offset``, an absolute log offset (core/registry/logstore.py).  There is a
record at every multiple of ``STEP`` (1 MiB) and at the start of every log segment, so a
count is a lookup plus one ``bytes.count`` of at most half a MiB, and a line's start is found
by counting within one MiB.

The supervisor keeps the file as it writes the log (:func:`keep`: in quiet moments, 4 MiB every
0.2 s while 4 MiB or more is not counted, and once the job has ended), and so does any reader:
a reader that needs counts past the last record counts the bytes in between (once) and appends
the records (under ``flock``; records only cover bytes already written, which never change).
The first read of a log nobody has counted costs one counting pass; every later one, in any
process, costs what the tail costs. When the log cap dropped bytes past the last record (the
count at the new first retained byte is then unknown), or the file is damaged, it is written
anew from the first retained byte. The file is a cache: deleting it loses nothing, and a reader
that cannot write it just counts.

Stdlib only (remote hosts run it on Python 3.9); the supervisor imports it by its plain name.
"""

from __future__ import annotations

import fcntl
import os
import struct
from bisect import bisect_left, bisect_right

try:
    from .text import looks_plain
except ImportError:  # the supervisor imports us as a top-level module next to text.py
    from text import looks_plain

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

__all__ = ["NAME", "STEP", "LineCounts", "keep"]

NAME = "lines.idx"
STEP = 1 << 20  # a record at every multiple of this many bytes
MAGIC = b"hermes-procs:ln2"  # 16 bytes: the file's format (ln1: a laxer PLAIN, which let C0 controls through)
RECORD = struct.Struct("<QQ")
WINDOW = 64 * 1024  # bytes read at a time when walking or counting lines
MAX_FILE = 64 << 20  # bytes of lines.idx read (4 M records: 4 TiB of output); larger is rewritten
COMPACT_AFTER = 4096  # records before the first retained byte kept before the file is rewritten
PLAIN = 1 << 63  # in a record's count: the bytes since the previous record are plain (text.looks_plain)
COUNT = PLAIN - 1
_FLAGS = os.O_NOFOLLOW | os.O_CLOEXEC


class LineCounts:
    """Counts of line ends over one consistent snapshot of a job's retained log.

    ``read(start, end)`` reads absolute offsets of that snapshot; ``base`` is its first
    retained byte, ``end`` its end, ``starts`` the absolute offsets where its segments start.
    ``jobdir`` None: nothing is read from or written to disk (counts for this snapshot only)."""

    def __init__(self, jobdir: str | os.PathLike[str] | None, base: int, end: int, starts: Sequence[int],
                 read: Callable[[int, int], bytes]) -> None:
        self.path = None if jobdir is None else os.path.join(jobdir, NAME)
        self.base, self.end, self.read = base, end, read
        self.starts = sorted(s for s in starts if base < s < end)
        self.fresh = False  # True: the file must be written anew (not appended to)
        self.unstored = False  # True: records could not be written (the counts hold for this snapshot only)
        records = self._load()
        if not records:
            records, self.fresh = [(base, 0)], True
        self.offsets = [o for o, _ in records]
        self.counts = [c & COUNT for _, c in records]
        self.plain_flags = [bool(c & PLAIN) for _, c in records]  # the span before each record is plain
        self._lines: int | None = None
        self._at_end: int | None = None
        self.at_base = self.counts[bisect_left(self.offsets, base)]

    # ---- queries ------------------------------------------------------------------------
    def newlines(self, offset: int) -> int:
        """The ``b"\\n"`` between the first retained byte and absolute ``offset`` (clamped)."""
        offset = min(max(offset, self.base), self.end)
        if offset == self.end:
            if self._at_end is None:
                self._at_end = self._newlines(offset)
            return self._at_end
        return self._newlines(offset)

    def _newlines(self, offset: int) -> int:
        self._cover(offset)
        i = bisect_right(self.offsets, offset) - 1
        here, count = self.offsets[i], self.counts[i]
        if i + 1 < len(self.offsets) and self.offsets[i + 1] - offset < offset - here:
            after = self.offsets[i + 1]
            return self.counts[i + 1] - self.read(offset, after).count(b"\n") - self.at_base
        return count + self.read(here, offset).count(b"\n") - self.at_base

    @property
    def line_count(self) -> int:
        """Lines of the retained log (a last line without its ``\\n`` yet counts)."""
        if self._lines is None:
            unfinished = 0 if self._ends_with_newline() else 1  # a last line without its \n yet
            self._lines = self.newlines(self.end) + unfinished if self.end > self.base else 0
        return self._lines

    def line_at(self, offset: int) -> int:
        """The line holding absolute ``offset``: 0 before the first retained byte, the line count
        from the end on (as LineIndex.line_at)."""
        return self.line_count if offset >= self.end else self.newlines(offset)

    def line_start(self, line: int) -> int:
        """The absolute offset where ``line`` starts; ``end`` past the last line."""
        found = self._after_newline(line)
        return self.end if found < 0 else found

    def spans(self, first: int, count: int) -> list[tuple[int, int]]:
        """``(start, end)`` absolute offsets of lines ``first .. first+count-1`` (clamped; ``end``
        excludes the ``\\n``). A line longer than the read window is stepped over by the counts."""
        out: list[tuple[int, int]] = []
        first = max(0, first)
        if count <= 0 or first >= self.line_count:
            return out
        pos, line = self.line_start(first), first
        while len(out) < count and pos < self.end:
            window = self.read(pos, min(self.end, pos + WINDOW))
            cut = 0
            while len(out) < count:
                i = window.find(b"\n", cut)
                if i < 0:
                    break
                out.append((pos + cut, pos + i))
                cut, line = i + 1, line + 1
            if cut or len(out) >= count:
                pos += cut
                continue
            nxt = -1 if pos + len(window) >= self.end else self._after_newline(line + 1)
            if nxt < 0:  # the last line, without its line end
                out.append((pos, self.end))
                break
            out.append((pos, nxt - 1))  # a line longer than the window
            pos, line = nxt, line + 1
        return out

    def _after_newline(self, line: int) -> int:
        """The offset just after the ``line``-th line end (the start of ``line``), or -1."""
        if line <= 0:
            return self.base
        want = line + self.at_base  # line ends since the origin
        self._cover(self.end, until_count=want)
        i = bisect_left(self.counts, want)
        if i < len(self.offsets):  # that line end lies before record i
            lo, hi, before, upto = self.offsets[i - 1], self.offsets[i], self.counts[i - 1], self.counts[i]
        else:
            lo, hi, before, upto = self.offsets[-1], self.end, self.counts[-1], self.newlines(self.end) + self.at_base
            if want > upto:
                return -1
        if want - before <= upto - want:
            return self._find(lo, hi, want - before)
        return self._find_back(lo, hi, upto - want + 1)

    def _find(self, lo: int, hi: int, n: int) -> int:
        """The offset after the ``n``-th line end from ``lo`` on (it lies before ``hi``)."""
        while lo < hi:
            piece = self.read(lo, min(hi, lo + WINDOW))
            here = piece.count(b"\n")
            if here >= n:
                pos = 0
                for _ in range(n):
                    pos = piece.find(b"\n", pos) + 1
                return lo + pos
            n, lo = n - here, lo + len(piece)
        return -1

    def _find_back(self, lo: int, hi: int, n: int) -> int:
        """The offset after the ``n``-th line end counted back from ``hi`` (it lies after ``lo``)."""
        while hi > lo:
            start = max(lo, hi - WINDOW)
            piece = self.read(start, hi)
            here = piece.count(b"\n")
            if here >= n:
                pos = len(piece)
                for _ in range(n):
                    pos = piece.rfind(b"\n", 0, pos)
                return start + pos + 1
            n, hi = n - here, start
        return -1

    def plain(self, start: int, end: int) -> bool:
        """Whether the bytes between absolute ``start`` and ``end`` are known to be plain
        (text.looks_plain: what the counts of their spans noted); False when not known."""
        i = bisect_right(self.offsets, start)
        while i < len(self.offsets):
            if not self.plain_flags[i]:
                return False
            if self.offsets[i] >= end:
                return True
            i += 1
        return False

    def _ends_with_newline(self) -> bool:
        return self.end > self.base and self.read(self.end - 1, self.end) == b"\n"

    # ---- the records ----------------------------------------------------------------------
    def cover(self, upto: int) -> int:
        """Records (stored) up to the last boundary at or before absolute ``upto``; the offset
        of the last record."""
        self._cover(min(upto, self.end))
        return self.offsets[-1]

    def _cover(self, upto: int, until_count: int | None = None) -> None:
        """Records up to the last boundary at or before ``upto`` (or until one counts
        ``until_count`` line ends); what was added is stored."""
        last = self.offsets[-1]
        added = False
        while True:
            nxt = self._next_boundary(last)
            if nxt > upto or (until_count is not None and self.counts[-1] >= until_count):
                break
            data = self.read(last, nxt)
            self.offsets.append(nxt)
            self.counts.append(self.counts[-1] + data.count(b"\n"))
            self.plain_flags.append(looks_plain(data))
            last, added = nxt, True
        if added:
            self._store()

    def _fields(self) -> Iterator[tuple[int, int]]:
        for offset, count, plain in zip(self.offsets, self.counts, self.plain_flags):
            yield offset, count | (PLAIN if plain else 0)

    def _next_boundary(self, offset: int) -> int:
        step = (offset // STEP + 1) * STEP
        i = bisect_right(self.starts, offset)
        return min(step, self.starts[i]) if i < len(self.starts) else step

    def _load(self) -> list[tuple[int, int]]:
        """The records of lines.idx that fit this snapshot, or [] (the file must be rewritten)."""
        if self.path is None:
            return []
        try:
            fd = os.open(self.path, os.O_RDONLY | _FLAGS)
        except OSError:
            return []
        try:
            data = os.read(fd, MAX_FILE + 1) if os.fstat(fd).st_size <= MAX_FILE else b""
        except OSError:  # e.g. a directory planted in its place: count without it
            return []
        finally:
            os.close(fd)
        if not data.startswith(MAGIC):
            return []
        records: list[tuple[int, int]] = []
        for offset, field in RECORD.iter_unpack(data[len(MAGIC):len(data) - (len(data) - len(MAGIC)) % RECORD.size]):
            count = field & COUNT
            before, counted = records[-1] if records else (0, 0)
            if records and not (offset > before and 0 <= count - (counted & COUNT) <= offset - before):
                break  # damaged from here: keep what came before
            if offset > self.end:
                break  # counted by a reader that saw more of the log than this snapshot
            records.append((offset, field))
        if not records or records[0][0] > self.base or records[0][1] & COUNT:
            return []
        at = bisect_left(records, (self.base, 0))
        if at == len(records) or records[at][0] != self.base:
            return []  # the count at the first retained byte was never taken: start again there
        if at > COMPACT_AFTER:  # records of output long dropped: start the file at the first retained byte
            self.fresh = True
            at_base = records[at][1] & COUNT
            return [(offset, field - at_base) for offset, field in records[at:]]
        return records

    def _store(self) -> None:
        """Add the new records to lines.idx (a cache: any failure only means counting again)."""
        if self.path is None:
            return
        try:
            if self.fresh:
                self._rewrite(self.path)
            else:
                self._append(self.path)
        except OSError:
            self.unstored = True

    def _append(self, path: str) -> None:
        fd = os.open(path, os.O_RDWR | _FLAGS)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            size = os.fstat(fd).st_size
            if os.pread(fd, len(MAGIC) + RECORD.size, 0) != MAGIC + RECORD.pack(self.offsets[0], 0):
                return  # rewritten from another origin meanwhile: not ours to extend
            torn = (size - len(MAGIC)) % RECORD.size
            if torn:  # a record cut short (a full disk): the whole ones stand
                size -= torn
                os.ftruncate(fd, size)
            last = RECORD.unpack(os.pread(fd, RECORD.size, size - RECORD.size))[0]
            new = [RECORD.pack(o, c) for o, c in self._fields() if o > last]
            if new:
                os.pwrite(fd, b"".join(new), size)
        finally:
            os.close(fd)

    def _rewrite(self, path: str) -> None:
        tmp = f"{path}.new-{os.getpid()}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _FLAGS, 0o600)
        try:
            try:
                os.write(fd, MAGIC + b"".join(RECORD.pack(o, c) for o, c in self._fields()))
            finally:
                os.close(fd)
            os.replace(tmp, path)
        except OSError:
            _unlink(tmp)
            raise
        self.fresh = False



def keep(jobdir: str, base: int, paths: Sequence[str], budget: int | None = None) -> int:
    """The writer's side: records in ``jobdir``'s lines.idx for the log made of ``paths``
    (its segments, oldest first, the first starting at absolute offset ``base``), at most
    ``budget`` bytes past the last record already there (None: up to the end). Returns the
    offset of the last record. Raises OSError when a segment cannot be opened or the records
    cannot be written."""
    fds: list[tuple[int, int, int]] = []  # (start, end, fd) of each segment
    try:
        pos = base
        for path in paths:
            fd = os.open(path, os.O_RDONLY | _FLAGS)
            size = os.fstat(fd).st_size
            fds.append((pos, pos + size, fd))
            pos += size

        def read(start: int, end: int) -> bytes:
            return b"".join(os.pread(fd, min(end, hi) - max(start, lo), max(start, lo) - lo)
                            for lo, hi, fd in fds if max(start, lo) < min(end, hi))

        counts = LineCounts(jobdir, base, pos, [lo for lo, _, _ in fds], read)
        last = counts.cover(pos if budget is None else counts.offsets[-1] + budget)
        if counts.unstored:
            raise OSError(f"{NAME} cannot be written")
        return last
    finally:
        for _, _, fd in fds:
            os.close(fd)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
