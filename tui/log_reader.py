"""The log pane's reader thread: the on-disk log of one job, read for the pane.

A :class:`LogReader` per shown job owns a :class:`hermes_procs.core.registry.logstore.LineIndex`
(an incremental line-offset index over the job's log segments). It refreshes the index, reads
only the raw lines of the requested window and posts them (:class:`LogReader.Lines`), at most
~20 times a second; the pane (log_pane.py) turns them into strips. Nothing here touches a
widget.

* Following: while the view is at the bottom it follows the tail. When the job floods (more
  than a few MiB not yet indexed) the reader does not index on every tick: it reads only the
  last screenful with ``logstore.tail_bytes`` and catches the index up when the user scrolls
  back (a frozen snapshot of the segments while the flood goes on).
* Opening a 500 MB log is instant: the first message carries the tail (no index needed); the
  index is built afterwards.
* Times: while the pane shows them, the reader looks up when each served line arrived (the
  job's ``times.idx``, core/supervisor/timeline.py); a time jump finds the first line of a time.
* Finds: log_find.py scans the raw log here, off the screen's thread.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from textual.message import Message

from hermes_procs.core.registry import logstore
from hermes_procs.core.supervisor import timeline

from .log_find import find_line

__all__ = ["LogReader"]


def _starts(start: int, lines: list[bytes], count: int) -> list[int]:
    """Absolute start offsets of the last ``count`` of ``lines`` (split on b"\\n" from ``start``)."""
    skip = sum(len(x) + 1 for x in lines[:-count]) if len(lines) > count else 0
    out = [start + skip]
    for x in lines[-count:][:-1]:
        out.append(out[-1] + len(x) + 1)
    return out


@dataclass(slots=True)
class _Request:
    first: int
    count: int
    follow: bool


class LogReader(threading.Thread):
    """Owns the job's LineIndex; serves viewport reads, finds and time jumps; posts what it read
    (its messages below) through `post` (the log pane's post_message: thread-safe)."""

    @dataclass(kw_only=True)
    class Lines(Message):
        """Raw lines ``first ..`` of the log (from the reader thread)."""

        generation: int  # the pane's job generation they were read for (older ones are dropped)
        first: int  # line number of lines[0]
        lines: list[bytes]
        total: int  # lines the log holds (an estimate in tail mode)
        follow: bool  # read for a following view
        tail: bool  # tail-only read (no index): the lines sit at the bottom of the log
        dropped: int = 0  # bytes the log cap dropped
        snapshot: bool = False  # a frozen snapshot of a flooding log
        times: list[float | None] | None = None  # when each line arrived (only while shown)

    @dataclass
    class JumpDone(Message):
        """The first line that arrived at or after ``when`` (None: nothing did)."""

        generation: int
        when: float
        line: int | None
        known: bool  # the job has an index of output times

    class SearchDone(Message):
        """Where a find landed (None: no more matches)."""

        def __init__(self, generation: int, query: str, line: int | None, forward: bool) -> None:
            super().__init__()
            self.generation = generation
            self.query = query
            self.line = line
            self.forward = forward

    FLOOD_BACKLOG = 8 << 20  # more unindexed bytes than this while following: tail-only mode
    FLOOD_RATE = 16 << 20  # bytes/s: faster than this while following, tail-only mode
    CALM_RATE = 1 << 20  # bytes/s: slower than this, a big backlog gets indexed
    TAIL_BYTES = 256 << 10

    def __init__(self, post: Callable[[Message], object], jobdir: Path, generation: int,
                 running: bool = True) -> None:
        super().__init__(name=f"log-reader-{jobdir.name}", daemon=True)
        self._post_message = post
        self.jobdir = Path(jobdir)
        self.generation = generation
        self.running = running
        self._req: _Request | None = None
        self._searches: queue.SimpleQueue[tuple[str, int, bool]] = queue.SimpleQueue()
        self._jumps: queue.SimpleQueue[float] = queue.SimpleQueue()
        self.times = False  # look up when each served line arrived (the pane shows them)
        self._tail_starts: list[int] = []  # absolute offsets of the last tail lines read
        self._wake = threading.Event()
        self._stop_ev = threading.Event()
        self.index: logstore.LineIndex | None = None
        self._marks: deque[tuple[float, int]] = deque()
        self._rate = 0.0
        self._retry_at = 0.0
        self._snap: logstore.LineIndex | None = None
        self._snap_fds: list[int] = []
        self._last_post: tuple | None = None
        self._last_size = -1
        self._estimate = 0  # lines the retained log holds, estimated while flooding

    # any thread
    def request(self, first: int, count: int, follow: bool) -> None:
        self._req = _Request(first, count, follow)
        self._wake.set()

    def search(self, query: str, from_line: int, forward: bool) -> None:
        self._searches.put((query, from_line, forward))
        self._wake.set()

    def jump(self, when: float) -> None:
        """Find the first line that arrived at or after ``when`` (epoch seconds)."""
        self._jumps.put(when)
        self._wake.set()

    def show_times(self, on: bool) -> None:
        self.times = on
        self._last_post = None  # serve the window again, with (or without) its times
        self._wake.set()

    def stop(self) -> None:
        self._stop_ev.set()
        self._wake.set()

    def _post(self, msg: Message) -> None:
        if not self._stop_ev.is_set():
            self._post_message(msg)

    # reader thread
    def run(self) -> None:
        try:
            self._run()
            self._drop_snapshot()
        except Exception as exc:  # never take the app down; show it in the pane
            failed = [f"[log reader failed: {exc}]".encode()]
            self._post(self.Lines(generation=self.generation, first=0, lines=failed,
                                     total=1, follow=True, tail=False))

    def _run(self) -> None:
        # 1. the tail first: a huge log shows at once, before any index exists
        req = self._req or _Request(0, 50, True)
        tail = self._tail_lines(max(req.count, 1))
        self._post(self.Lines(generation=self.generation, first=0, lines=tail, total=len(tail),
                                 follow=True, tail=True))
        # measure how fast the log grows before deciding to index it (a flood is never indexed
        # while the view follows it)
        self._growth_rate()
        self._wake.wait(0.1)
        quiet_since = time.monotonic()
        tick = 0.05
        serve = True
        while not self._stop_ev.is_set():
            if serve:
                self._serve()
            if self.view_index() is not None:
                while not self._searches.empty():
                    self._do_search(*self._searches.get())
                while not self._jumps.empty():
                    self._do_jump(self._jumps.get())
            self._wake.wait(tick)
            woke = self._wake.is_set()
            self._wake.clear()
            if self._stop_ev.is_set():
                break
            size = self._size()
            changed = size != self._last_size
            now = time.monotonic()
            if changed:
                quiet_since = now
                tick = 0.05  # at most ~20 updates a second while output flows
            elif now - quiet_since > 2.0:
                tick = 0.5  # quiet: poll twice a second
            self._last_size = size
            serve = changed or woke or self.index is None

    def _size(self) -> int:
        """A cheap fingerprint of the log (sizes and inodes of the segments)."""
        total = 0
        for name in (logstore.OLD_LOG_NAME, logstore.LOG_NAME):
            try:
                st = os.stat(self.jobdir / name)
                total += st.st_size + st.st_ino
            except OSError:
                pass
        return total

    def _tail_lines(self, count: int, with_size: bool = False):
        """The last ``count`` raw lines, reading as little of the end of the log as possible
        (with times shown, their start offsets go to ``_tail_starts``)."""
        want = max(8 << 10, count * 160)
        while True:
            try:
                start, data = logstore.tail_span(self.jobdir, want)
            except RuntimeError:  # rotating faster than we can read: next tick
                return ([], 0.0) if with_size else []
            lines = data.split(b"\n")
            if lines and lines[-1] == b"" and len(lines) > 1:
                lines.pop()
            cut = len(data) >= want
            if cut and len(lines) > 1:
                start += len(lines[0]) + 1
                lines = lines[1:]  # the first one is probably cut
            if len(lines) >= count or not cut or want >= self.TAIL_BYTES:
                if self.times:
                    self._tail_starts = _starts(start, lines, count)
                if with_size:  # and the mean line length (bytes) over every line read
                    return lines[-count:], sum(len(x) + 1 for x in lines) / max(1, len(lines))
                return lines[-count:]
            want *= 4

    def _growth_rate(self) -> float:
        """Bytes per second the log grew over about the last second (0 when unknown)."""
        now = time.monotonic()
        try:
            end = logstore.total_bytes(self.jobdir)
        except Exception:
            return self._rate
        marks = self._marks
        if marks and end < marks[-1][1]:
            end = marks[-1][1]  # a read in the middle of a rotation: absolute offsets never go back
        marks.append((now, end))
        while len(marks) > 2 and now - marks[1][0] >= 1.0:
            marks.popleft()
        first = marks[0]
        if now - first[0] >= 0.05:
            self._rate = (end - first[1]) / (now - first[0])
        return self._rate

    def _serve(self) -> None:
        req = self._req or _Request(0, 50, True)
        rate = self._growth_rate()
        if req.follow:
            self._drop_snapshot()
            if self._flooding(rate):  # show the last screenful without indexing every byte
                self._serve_tail(req)
                return
        elif self._snap is not None or rate > self.FLOOD_RATE:
            # scrolled back during a flood: a frozen snapshot of the log (End follows again)
            self._serve_snapshot(req, self._snap or self._take_snapshot())
            return
        if time.monotonic() < self._retry_at:
            return
        idx = self._fresh_index()
        if idx is None:  # the log rotates faster than it can be indexed: wait a little
            self._retry_at = time.monotonic() + 1.0
            if req.follow:
                self._serve_tail(req)
            else:
                self._serve_snapshot(req, self._take_snapshot())
            return
        self._serve_index(idx, req)

    def _flooding(self, rate: float) -> bool:
        """Whether the log grows too fast to index every byte as it comes (following the end)."""
        try:
            backlog = logstore.total_bytes(self.jobdir) - (self.index.end_offset if self.index else 0)
        except Exception:
            backlog = 0
        return rate > self.FLOOD_RATE or (backlog > self.FLOOD_BACKLOG and rate > self.CALM_RATE)

    def _serve_snapshot(self, req: _Request, snap: logstore.LineIndex | None) -> None:
        if snap is not None:
            self._serve_index(snap, req, snapshot=True)

    def _fresh_index(self) -> logstore.LineIndex | None:
        """The line index brought up to date (made on first use: a big log is scanned here);
        None when the log rotates faster than it can be indexed."""
        try:
            if self.index is None:
                self.index = logstore.LineIndex(self.jobdir)
            else:
                self.index.refresh()
        except RuntimeError:
            return None
        return self.index

    def _serve_index(self, idx: logstore.LineIndex, req: _Request, snapshot: bool = False) -> None:
        total = idx.line_count
        if req.follow:
            first = max(0, total - req.count)
        else:
            first = max(0, min(req.first, max(0, total - 1)))
        key = ("index", snapshot, first, req.count, total, idx.end_offset, idx.dropped_bytes)
        if key == self._last_post:
            return
        self._last_post = key
        lines = idx.read_raw_lines(first, req.count, max_bytes=256 << 10)
        times = self._times_of([s for s, _ in idx.spans(first, len(lines))]) if self.times else None
        self._post(self.Lines(generation=self.generation, first=first, lines=lines, total=total,
                                 follow=req.follow, tail=False, dropped=idx.dropped_bytes,
                                 snapshot=snapshot, times=times))

    def _times_of(self, starts: list[int]) -> list[float | None]:
        """When the lines starting at these absolute offsets arrived (None: unknown)."""
        with timeline.TimeIndex(self.jobdir) as times:
            return times.times_at(starts)

    def _do_jump(self, when: float) -> None:
        idx = self.view_index()
        assert idx is not None
        if idx is self.index:
            idx.refresh()
        with timeline.TimeIndex(self.jobdir) as times:
            known = times.exists
            offset = times.offset_at(when)
        line = idx.line_at(offset) if offset is not None else None
        if line is not None and line >= idx.line_count:
            line = None
        self._post(self.JumpDone(self.generation, when, line, known))

    def _take_snapshot(self) -> logstore.LineIndex | None:
        """Index the log's segments as they are now, through open descriptors, so a rotation
        cannot pull them away (a frozen view while the job floods)."""
        for _ in range(3):
            base = logstore.dropped_bytes(self.jobdir)
            fds: list[int] = []
            for name in (logstore.OLD_LOG_NAME, logstore.LOG_NAME):
                try:
                    fds.append(os.open(self.jobdir / name, os.O_RDONLY | os.O_CLOEXEC))
                except OSError:
                    pass
            if logstore.dropped_bytes(self.jobdir) == base and fds:
                try:
                    snap = logstore.LineIndex([f"/proc/self/fd/{fd}" for fd in fds], base=base)
                except Exception:
                    snap = None
                if snap is not None:
                    self._snap, self._snap_fds = snap, fds
                    return snap
            for fd in fds:
                os.close(fd)
        return None

    def _drop_snapshot(self) -> None:
        if self._snap is not None:
            for fd in self._snap_fds:
                try:
                    os.close(fd)
                except OSError:
                    pass
            self._snap, self._snap_fds = None, []

    def view_index(self) -> logstore.LineIndex | None:
        """The index lines are served from: the frozen snapshot, else the live index."""
        return self._snap if self._snap is not None else self.index

    def _serve_tail(self, req: _Request) -> None:
        lines, avg = self._tail_lines(req.count, with_size=True)
        known = self.index.line_count if self.index is not None else 0
        # how many lines the retained log holds, estimated from the tail's line length, so
        # the scrollbar means something and the user can scroll back (to a snapshot)
        estimate = known
        if lines:
            try:
                retained = logstore.total_bytes(self.jobdir) - logstore.dropped_bytes(self.jobdir)
            except Exception:
                retained = -1
            # the two reads race with a rotation (the dropped count can move on between them):
            # keep the previous estimate rather than collapse to a screenful
            if retained >= avg * len(lines):
                self._estimate = int(retained / max(1.0, avg))
            estimate = max(known, self._estimate, len(lines))
        key = ("tail", req.count, len(lines), lines[-1] if lines else b"", estimate)
        if lines and key != self._last_post:
            self._last_post = key
            starts = self._tail_starts
            times = self._times_of(starts) if self.times and len(starts) == len(lines) else None
            self._post(self.Lines(generation=self.generation, first=estimate - len(lines), lines=lines,
                                     total=estimate, follow=True, tail=True, times=times))

    def _do_search(self, query: str, from_line: int, forward: bool) -> None:
        idx = self.view_index()
        assert idx is not None
        if idx is self.index:
            idx.refresh()
        found = find_line(idx, query, from_line, forward, self._stop_ev.is_set)
        self._post(self.SearchDone(self.generation, query, found, forward))
