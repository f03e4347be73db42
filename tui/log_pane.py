"""The log pane: the selected job's on-disk output, rendered one viewport at a time.

Data flow
---------
A :class:`LogReader` thread per shown job owns a :class:`hermes_procs.core.registry.logstore.LineIndex`
(an incremental line-offset index over the job's log segments).  It refreshes the index, reads
only the raw lines of the requested window and posts them to the pane in a
:class:`LogPane.Lines` message, at most ~20 times a second.  The pane never reads the disk in
``render_line``: it turns the few raw lines it was given into styled strips (cached).

* Following: while the view is at the bottom it follows the tail.  Scrolling up stops
  following; ``End`` resumes.  When the job floods (more than a few MiB not yet indexed) the
  reader does not index on every tick: it reads only the last screenful with
  ``logstore.tail_bytes`` and catches the index up when the user scrolls back.
* Opening a 500 MB log is instant: the first message carries the tail (no index needed); the
  index is built in the reader thread afterwards.
* Safety: a line is decoded, every escape sequence other than SGR (colours) is removed by
  ``core.text.strip_ansi(keep_sgr=True)`` (OSC 52, titles, hyperlinks, cursor moves, private
  modes, DCS, C1 controls ...), ``\\r`` redraws are
  collapsed, and only then the SGR codes are parsed by ``rich``'s ANSI decoder into styles.
  Nothing a job wrote ever reaches the real terminal.
* Times: ``T`` shows when each line arrived in a gutter (``HH:MM:SS``, from the job's
  ``times.idx``, core/supervisor/timeline.py); the reader looks the times up only while they are shown,
  for the lines it serves.  ``@`` jumps to the output of a time ("5m" ago, "06:30").
* Search: :meth:`LogPane.search` scans the raw log in the reader thread (1 MiB chunks, case
  insensitive), forward or backward from the current line, and scrolls to the match.
"""

from __future__ import annotations

import os
import queue
import re
import threading
import time
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from pathlib import Path

from rich.ansi import AnsiDecoder
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events, on
from textual.actions import SkipAction
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.worker import get_current_worker

from hermes_procs.core.registry import logstore
from hermes_procs.core.registry.userregex import PatternTimeout, UserRegex
from hermes_procs.core.supervisor import timeline
from hermes_procs.core.supervisor.text import collapse_cr, strip_ansi

from .config import HighlightRule
from .log_filter import FilterProgress, FilterRow, filter_log
from .log_times import GUTTER, TimeJumpScreen, gutter_text

__all__ = ["LogPane", "LogReader", "render_raw_line"]

# --- turning one raw line into safe styled text --------------------------------------------

_SGR = re.compile(r"\x1b\[[0-9;:]*m")
_SELECTED = Style(reverse=True)
_GUTTER_STYLE = Style(dim=True)
MAX_LINE_CHARS = 4000  # a longer line is cut (its end is kept when it is a \r redraw)


def _visible_len(s: str) -> int:
    return len(_SGR.sub("", s))


def _collapse(s: str) -> str:
    """Collapse ``\\r`` redraws (and backspaces) of a line that may hold SGR codes."""
    if "\r" not in s and "\b" not in s:
        return s
    if "\b" not in s:
        segs = [seg for seg in s.split("\r")]
        while len(segs) > 1 and not _SGR.sub("", segs[-1]):
            segs.pop()  # a trailing "\r" (CRLF) or colour-only tail changes nothing
        last = segs[-1]
        if len(segs) == 1 or _visible_len(last) >= max(_visible_len(x) for x in segs[:-1]):
            return last  # the usual progress redraw: the last frame covers the earlier ones
    # partial overwrite: exact columns matter more than colours
    return collapse_cr(_SGR.sub("", s))


def render_raw_line(raw: bytes) -> Text:
    """Raw bytes of one log line -> a safe, styled, single-line Text."""
    s = raw.decode("utf-8", "replace")
    if len(s) > MAX_LINE_CHARS:
        cut = len(s) - MAX_LINE_CHARS
        body = s.rstrip("\r")
        k = body.rfind("\r", 0, len(body) - 1)
        if k != -1 and len(body) - k <= MAX_LINE_CHARS:
            s = body[k + 1:]
        else:
            s = s[:MAX_LINE_CHARS] + f"… [{cut} more characters]"
    s = _collapse(strip_ansi(s, keep_sgr=True))
    text = AnsiDecoder().decode_line(s)
    text.expand_tabs(8)
    text.no_wrap = True
    return text


def _starts(start: int, lines: list[bytes], count: int) -> list[int]:
    """Absolute start offsets of the last ``count`` of ``lines`` (split on b"\\n" from ``start``)."""
    skip = sum(len(x) + 1 for x in lines[:-count]) if len(lines) > count else 0
    out = [start + skip]
    for x in lines[-count:][:-1]:
        out.append(out[-1] + len(x) + 1)
    return out


@dataclass(slots=True)
class _Filter:
    """The filtered view: what is shown and how far the scan is."""

    pattern: UserRegex
    context: int
    rows: list[FilterRow | None] = field(default_factory=list)  # None: a separator
    matches: int = 0
    scanned: int = 0
    total: int = 0
    done: bool = False
    truncated: bool = False
    error: str = ""


# --- the reader thread ---------------------------------------------------------------------


@dataclass(slots=True)
class _Request:
    first: int
    count: int
    follow: bool


class LogReader(threading.Thread):
    """Owns the job's LineIndex; serves viewport reads and searches; posts to the pane."""

    FLOOD_BACKLOG = 8 << 20  # more unindexed bytes than this while following: tail-only mode
    FLOOD_RATE = 16 << 20  # bytes/s: faster than this while following, tail-only mode
    CALM_RATE = 1 << 20  # bytes/s: slower than this, a big backlog gets indexed
    TAIL_BYTES = 256 << 10

    def __init__(self, pane: LogPane, jobdir: Path, generation: int, running: bool = True) -> None:
        super().__init__(name=f"log-reader-{jobdir.name}", daemon=True)
        self.pane = pane
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
            self.pane.post_message(msg)

    # reader thread
    def run(self) -> None:
        try:
            self._run()
            self._drop_snapshot()
        except Exception as exc:  # never take the app down; show it in the pane
            failed = [f"[log reader failed: {exc}]".encode()]
            self._post(LogPane.Lines(generation=self.generation, first=0, lines=failed,
                                     total=1, follow=True, tail=False))

    def _run(self) -> None:
        # 1. the tail first: a huge log shows at once, before any index exists
        req = self._req or _Request(0, 50, True)
        tail = self._tail_lines(max(req.count, 1))
        self._post(LogPane.Lines(generation=self.generation, first=0, lines=tail, total=len(tail),
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
        self._post(LogPane.Lines(generation=self.generation, first=first, lines=lines, total=total,
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
        self._post(LogPane.JumpDone(self.generation, when, line, known))

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
            self._post(LogPane.Lines(generation=self.generation, first=estimate - len(lines), lines=lines,
                                     total=estimate, follow=True, tail=True, times=times))

    def _do_search(self, query: str, from_line: int, forward: bool) -> None:
        idx = self.view_index()
        assert idx is not None
        if idx is self.index:
            idx.refresh()
        needle = query.lower().encode("utf-8", "replace")
        found = None
        if needle and idx.line_count:
            from_line = max(0, min(from_line, idx.line_count - 1))
            find = self._search_forward if forward else self._search_backward
            found = find(idx, query, needle, from_line)
        self._post(LogPane.SearchDone(self.generation, query, found, forward))

    # the raw bytes are read in chunks of 1 MiB, overlapping by the needle's length less one
    _SEARCH_CHUNK = 1 << 20

    def _search_forward(self, idx: logstore.LineIndex, query: str, needle: bytes, from_line: int) -> int | None:
        """The first line after `from_line` whose text contains `query` (case-insensitive)."""
        hi, over = idx.end_offset, len(needle) - 1
        pos = idx.line_span(from_line)[1] + 1  # after the current line
        while pos < hi and not self._stop_ev.is_set():
            data = idx.read(pos, min(hi, pos + self._SEARCH_CHUNK + over)).lower()
            i = data.find(needle)
            while i != -1:
                line = self._line_of(pos + i)
                if self._line_matches(line, query):  # the bytes matched; does the shown text?
                    return line
                nxt = idx.line_span(line)[1] + 1 - pos
                i = data.find(needle, max(i + 1, nxt))
            pos += self._SEARCH_CHUNK
        return None

    def _search_backward(self, idx: logstore.LineIndex, query: str, needle: bytes, from_line: int) -> int | None:
        """The last line before `from_line` whose text contains `query` (case-insensitive)."""
        lo, hi, over = idx.dropped_bytes, idx.end_offset, len(needle) - 1
        pos = idx.line_span(from_line)[0]  # before the current line
        while pos > lo and not self._stop_ev.is_set():
            s = max(lo, pos - self._SEARCH_CHUNK)
            data = idx.read(s, min(hi, pos + over)).lower()
            i = data.rfind(needle)
            while i != -1:
                line = self._line_of(s + i)
                if line < from_line and self._line_matches(line, query):
                    return line
                lstart = idx.line_span(line)[0] - s
                if lstart <= 0:
                    break
                i = data.rfind(needle, 0, lstart)
            pos = s
        return None

    def _line_matches(self, line: int, query: str) -> bool:
        raw = self.view_index().read_raw_lines(line, 1, max_bytes=1 << 20)  # type: ignore[union-attr]
        return bool(raw) and query.lower() in render_raw_line(raw[0]).plain.lower()

    def _line_of(self, offset: int) -> int:
        """Line number holding absolute byte ``offset`` (binary search on the index)."""
        idx = self.view_index()
        assert idx is not None
        lo, hi = 0, idx.line_count - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if idx.line_span(mid)[0] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo


# --- the pane ------------------------------------------------------------------------------


class LogPane(ScrollView, can_focus=True):
    """Scrollable view of one job's log; follows the tail at the bottom."""

    DEFAULT_CSS = """
    LogPane {
        height: 1fr;
        background: $surface;
        scrollbar-size-vertical: 1;
    }
    LogPane:focus { background-tint: $foreground 3%; }
    """
    HELP_TITLE = "Log pane (l, Tab)"
    BINDINGS = [
        Binding("up", "scroll_up", "Up", show=False, tooltip="scroll (stops following)"),
        Binding("down", "scroll_down", "Down", show=False, tooltip="scroll (stops following)"),
        Binding("pageup", "page_up", "Page up", show=False, tooltip="scroll (stops following)"),
        Binding("pagedown", "page_down", "Page down", show=False, tooltip="scroll (stops following)"),
        Binding("home", "scroll_home", "Top", show=False, tooltip="the first line (stops following)"),
        Binding("end", "follow", "Follow", show=False, id="follow",
                tooltip="jump to the end and follow the output again"),
        Binding("v", "select_lines", "Select", show=False, id="select_lines",
                tooltip="select lines: ↑ ↓ PgUp PgDn extend, y copies, Esc cancels (or drag the mouse)"),
        Binding("y", "copy_selection", "Copy", show=False, id="copy_selection",
                tooltip="copy the selected lines (system clipboard, else OSC 52 through the terminal)"),
        Binding("escape", "cancel_selection", "Cancel", show=False, tooltip="drop the selection"),
        Binding("ctrl+s", "save_log", "Save", show=False, id="save_log",
                tooltip="save the whole log, raw or plain text, to a file you name"),
        Binding("T", "toggle_times", "Times", show=False, id="toggle_times",
                tooltip="show / hide when each line arrived (an HH:MM:SS gutter)"),
        Binding("at", "jump_to_time", "Jump to time", show=False, key_display="@", id="jump_to_time",
                tooltip="jump to the output of a time: minutes ago (5), a duration (90s) or a time (06:30)"),
    ]
    ALLOW_SELECT = False  # the pane selects whole lines itself (Textual's selection needs text widgets)

    follow: reactive[bool] = reactive(True)

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

    @dataclass
    class CopyLines(Message):
        """The user asked to copy lines ``first..last`` of the log of ``jobdir``."""

        jobdir: Path
        first: int
        last: int

    @dataclass
    class SaveRequested(Message):
        """The user asked to save the log of ``session_id`` (Ctrl-S)."""

        session_id: str
        jobdir: Path

    class SearchDone(Message):
        def __init__(self, generation: int, query: str, line: int | None, forward: bool) -> None:
            super().__init__()
            self.generation = generation
            self.query = query
            self.line = line
            self.forward = forward

    class Status(Message):
        """Follow state or search result changed (for the app's status line)."""

        def __init__(self, pane: LogPane, text: str) -> None:
            super().__init__()
            self.pane = pane
            self.text = text

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.session_id: str | None = None
        self.jobdir: Path | None = None
        self._filter: _Filter | None = None
        self.highlights: tuple[HighlightRule, ...] = ()  # regex -> style, from the config
        self._fstrips: dict[int, Strip] = {}
        self.sel_anchor: int | None = None  # where the selection started (None: no selection)
        self.sel_cursor = 0  # the other end, moved by the keys or the mouse
        self._dragging = False
        self.reader: LogReader | None = None
        self.generation = 0
        self.total = 0
        self.first = 0
        self._raw: list[bytes] = []
        self.show_times = False  # the HH:MM:SS gutter (T)
        self._times: list[float | None] = []  # when each line of _raw arrived (while shown)
        self._tail_mode = False
        self._tail_total = -1  # the virtual height last set from a tail-only message
        self._tail_resized = 0.0  # when (monotonic)
        self._snapshot_mode = False
        self._strips: OrderedDict[tuple[bytes, bool], Strip] = OrderedDict()
        self._max_width = 0
        self._programmatic = 0
        self.search_text = ""
        self.match_line: int | None = None
        # a search the reader has not answered yet, and the steps pressed meanwhile (True:
        # forward): each starts where the one before it landed, so three quick Downs move three
        self._search_pending: tuple[int, str] | None = None  # (generation, query)
        self._search_steps: list[bool] = []
        self.updates = 0  # repaint-causing messages handled (for tests and benches)
        self.resizes = 0  # virtual size changes: each one is a layout pass of the screen

    # --- job selection --------------------------------------------------------------

    def show_job(self, session_id: str | None, jobdir: Path | None) -> None:
        """Switch to another job (None: nothing)."""
        if session_id == self.session_id and self.reader is not None:
            return
        self.stop_reader()
        self.generation += 1
        self._drop_filter()
        self.session_id = session_id
        self.jobdir = jobdir
        self.sel_anchor = None
        self.total = 0
        self.first = 0
        self._raw = []
        self._times = []
        self._strips.clear()
        self._max_width = 0
        self.match_line = None
        self._snapshot_mode = False
        self._tail_mode = False
        self._tail_total = -1
        self.follow = True
        self._set_virtual(0)
        if session_id and jobdir is not None:
            self.reader = LogReader(self, jobdir, self.generation)
            self.reader.times = self.show_times
            self.reader.request(0, self._page(), True)
            self.reader.start()
        self.refresh()

    def stop_reader(self) -> None:
        if self.reader is not None:
            self.reader.stop()
            self.reader = None

    def on_unmount(self) -> None:
        self.stop_reader()
        self._drop_filter()

    # --- scrolling and following -------------------------------------------------------

    def _page(self) -> int:
        return max(1, self.size.height or 40)

    def _set_virtual(self, total: int) -> None:
        self.resizes += 1
        self._programmatic += 1
        try:
            self.virtual_size = Size(max(self._max_width + self._gutter(), 1), total)
        finally:
            self._programmatic -= 1

    def _request(self, force: bool = False) -> None:
        """Ask the reader for the lines around the viewport (when they are not loaded yet)."""
        if self.reader is None:
            return
        page = self._page()
        if self.follow:
            self.reader.request(0, page + 1, True)
            return
        top = int(self.scroll_y)
        loaded = not self._tail_mode and self.first <= top and top + page <= self.first + len(self._raw)
        if force or not loaded:
            self.reader.request(max(0, top - page), 3 * page, False)

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        if self._programmatic or self._filter is not None:
            return
        at_bottom = round(new) >= self.max_scroll_y
        if self.follow != at_bottom:
            self.follow = at_bottom
        self._request()

    def _follow_status(self) -> None:
        self.post_message(self.Status(self, "following" if self.follow else "paused (End follows)"))

    def watch_follow(self, follow: bool) -> None:
        self._follow_status()
        if follow:
            self._request()

    def on_resize(self) -> None:
        self._strips.clear()
        self._request()
        if self.follow:
            self._scroll_bottom()

    def _scroll_bottom(self) -> None:
        self._programmatic += 1
        try:
            self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True, force=True)
        finally:
            self._programmatic -= 1

    def action_follow(self) -> None:
        self.follow = True
        self._scroll_bottom()
        self._request()

    # no scroll animations: on a big log each animation frame would ask for other lines
    def action_scroll_home(self) -> None:
        self.follow = False
        self.scroll_to(y=0, animate=False, immediate=True, force=True)

    def action_scroll_up(self) -> None:
        if self.sel_anchor is not None:
            return self._move_selection(-1)
        self.scroll_to(y=self.scroll_y - 1, animate=False, immediate=True, force=True)

    def action_scroll_down(self) -> None:
        if self.sel_anchor is not None:
            return self._move_selection(1)
        self.scroll_to(y=self.scroll_y + 1, animate=False, immediate=True, force=True)

    def action_page_up(self) -> None:
        if self.sel_anchor is not None:
            return self._move_selection(-self._page())
        self.scroll_to(y=self.scroll_y - self.scrollable_content_region.height, animate=False,
                       immediate=True, force=True)

    def action_page_down(self) -> None:
        if self.sel_anchor is not None:
            return self._move_selection(self._page())
        self.scroll_to(y=self.scroll_y + self.scrollable_content_region.height, animate=False,
                       immediate=True, force=True)

    # --- filter mode: only the matching lines of the whole log -------------------------------

    @property
    def filtering(self) -> bool:
        return self._filter is not None

    def start_filter(self, pattern: UserRegex, context: int) -> None:
        """Show only the lines of the whole on-disk log that match ``pattern`` (with ``context``
        lines around each), scanned in a worker thread; the view fills in as it goes."""
        if self.jobdir is None:
            return
        self.stop_reader()
        self.generation += 1
        self.sel_anchor = None
        self._drop_filter()
        self._filter = _Filter(pattern, context)
        self._fstrips.clear()
        self.follow = False
        self._set_virtual(0)
        self.scroll_to(y=0, animate=False, immediate=True, force=True)
        self._filter_status()
        generation, jobdir, f = self.generation, self.jobdir, self._filter

        def scan() -> None:
            worker = get_current_worker()
            filter_log(jobdir, pattern, context,
                       lambda p: self.post_message(self.FilterUpdate(generation, p)),
                       lambda: worker.is_cancelled or self._filter is not f)

        self.run_worker(scan, thread=True, exclusive=True, group="filter")
        self.refresh()

    def _drop_filter(self) -> None:
        """Forget the filter; its scan stops (a pattern running in a worker process is killed,
        so a thread waiting on it never keeps the dashboard from closing)."""
        if self._filter is not None:
            self._filter.pattern.abort()
            self._filter = None

    def clear_filter(self) -> None:
        """Back to the whole log, following its end."""
        if self._filter is None:
            return
        self._drop_filter()
        self._fstrips.clear()
        session_id, self.session_id = self.session_id, None  # show_job starts over
        self.show_job(session_id, self.jobdir)

    @dataclass
    class FilterUpdate(Message):
        generation: int
        progress: FilterProgress

    @on(FilterUpdate)
    def _on_filter_update(self, msg: FilterUpdate) -> None:
        msg.stop()
        f = self._filter
        if f is None or msg.generation != self.generation:
            return
        p = msg.progress
        for row in p.rows:
            if row.gap:
                f.rows.append(None)
            f.rows.append(row)
        f.matches, f.scanned, f.total, f.done, f.truncated = p.matches, p.scanned, p.total, p.done, p.truncated
        if p.error:
            f.error = "pattern took too long" if isinstance(p.error, PatternTimeout) else "the pattern failed"
            self.notify(str(p.error), title="Filter stopped", severity="error", markup=False, timeout=10)
        if p.rows:
            self._set_virtual(len(f.rows))
            self.refresh()
        self._filter_status()

    def _filter_status(self) -> None:
        f = self._filter
        if f is None:
            return
        around = f" ±{f.context}" if f.context else ""
        text = f"filter /{f.pattern.source}/{around}: {f.matches} matching line{'s' * (f.matches != 1)}"
        if f.error:
            text = f"filter /{f.pattern.source}/: {f.error}, stopped at {100 * f.scanned // max(1, f.total)} %"
        elif not f.done:
            text += f" · scanning {100 * f.scanned // max(1, f.total)} %"
        elif f.truncated:
            text += " · first 200,000 rows only"
        self.post_message(self.Status(self, text + " · & edits, Esc in the bar clears"))

    # --- selecting and copying lines -------------------------------------------------------

    def selection(self) -> tuple[int, int] | None:
        """The selected lines (first, last), inclusive."""
        if self.sel_anchor is None:
            return None
        return min(self.sel_anchor, self.sel_cursor), max(self.sel_anchor, self.sel_cursor)

    def action_select_lines(self) -> None:
        if self._filter is not None:
            self.notify("Clear the filter (Esc in the filter bar, or &) to select lines.", timeout=3)
            return
        if not self.total:
            return
        self.follow = False
        bottom = min(self.total - 1, int(self.scroll_y) + self._page() - 1)
        self.sel_anchor = self.sel_cursor = bottom
        self._selection_status()
        self.refresh()

    def _move_selection(self, delta: int) -> None:
        self.sel_cursor = max(0, min(self.total - 1, self.sel_cursor + delta))
        top, page = int(self.scroll_y), self._page()
        if not top <= self.sel_cursor < top + page:  # keep the moving end in view
            y = self.sel_cursor if self.sel_cursor < top else self.sel_cursor - page + 1
            self.scroll_to(y=y, animate=False, immediate=True, force=True)
        self._selection_status()
        self.refresh()

    def _selection_status(self) -> None:
        first, last = self.selection() or (0, 0)
        n = last - first + 1
        self.post_message(self.Status(self, f"{n} line{'s' * (n != 1)} selected · y copies · Esc cancels"))

    def action_copy_selection(self) -> None:
        sel = self.selection()
        if sel is None or self.jobdir is None:
            self.app.bell()
            return
        self.post_message(self.CopyLines(self.jobdir, *sel))
        self.action_cancel_selection()

    def action_cancel_selection(self) -> None:
        if self.sel_anchor is None:
            raise SkipAction()  # Esc means "back" further up
        self.sel_anchor = None
        self._follow_status()
        self.refresh()

    # --- times: when each line arrived ---------------------------------------------------------

    def _gutter(self) -> int:
        return GUTTER if self.show_times and self._filter is None else 0

    def action_toggle_times(self) -> None:
        self.show_times = not self.show_times
        if not self.show_times:
            self._times = []
        if self.reader is not None:
            self.reader.show_times(self.show_times)
        self._set_virtual(self.total)
        self.refresh()
        if self.show_times and self._filter is not None:
            self.notify("Times show in the whole log (clear the filter to see them).", timeout=3)

    def action_jump_to_time(self) -> None:
        if self.reader is None or self._filter is not None:
            self.app.bell()
            return

        def chosen(when: float | None) -> None:
            if when is not None and self.reader is not None:
                self.post_message(self.Status(self, f"looking for the output of {gutter_text(when).strip()}…"))
                self.reader.jump(when)

        self.app.push_screen(TimeJumpScreen(), chosen)

    @on(JumpDone)
    def _on_jump_done(self, msg: JumpDone) -> None:
        msg.stop()
        if msg.generation != self.generation:
            return
        at = gutter_text(msg.when).strip()
        if not msg.known:
            self.post_message(self.Status(self, "this job has no output times (started by an older hermes-procs)"))
            self.app.bell()
            return
        if msg.line is None:
            self.post_message(self.Status(self, f"no output since {at}"))
            self.app.bell()
            return
        self.follow = False
        self._programmatic += 1
        try:
            self.scroll_to(y=msg.line, animate=False, immediate=True, force=True)
        finally:
            self._programmatic -= 1
        self._request(force=True)
        self.refresh()
        self.post_message(self.Status(self, f"output of {at} on: line {msg.line + 1} (End follows)"))

    def action_save_log(self) -> None:
        if self.session_id and self.jobdir is not None:
            self.post_message(self.SaveRequested(self.session_id, self.jobdir))

    def _line_at(self, event: events.MouseEvent) -> int | None:
        offset = event.get_content_offset(self)
        if offset is None or not self.total:
            return None
        return max(0, min(self.total - 1, int(self.scroll_y) + offset.y))

    def on_mouse_down(self, event: events.MouseDown) -> None:
        line = self._line_at(event)
        if line is None or event.button != 1 or self._filter is not None:
            return
        self.focus()
        self.sel_anchor = self.sel_cursor = line
        self._dragging = True
        self.capture_mouse()
        self.refresh()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        if not self._dragging:
            return
        offset = event.get_content_offset_capture(self)
        top, page = int(self.scroll_y), self._page()
        line = top + offset.y
        if offset.y < 0 or offset.y >= page:  # dragging past an edge scrolls
            self.scroll_to(y=top + (-1 if offset.y < 0 else 1), animate=False, immediate=True, force=True)
        self.sel_cursor = max(0, min(self.total - 1, line))
        if self.follow and self.sel_cursor != self.sel_anchor:
            self.follow = False
        self._selection_status()
        self.refresh()

    def on_mouse_up(self, event: events.MouseUp) -> None:
        if not self._dragging:
            return
        self._dragging = False
        self.release_mouse()
        if self.sel_anchor == self.sel_cursor:  # a click, not a drag
            self.sel_anchor = None
            self._follow_status()
            self.refresh()
            return
        self.action_copy_selection()  # as a terminal does: a drag copies

    # --- messages from the reader --------------------------------------------------------

    @on(Lines)
    def _on_lines(self, msg: Lines) -> None:
        msg.stop()
        if msg.generation != self.generation:
            return
        self.updates += 1
        if msg.snapshot != self._snapshot_mode:
            self._snapshot_mode = msg.snapshot
            if msg.snapshot:
                self.post_message(self.Status(self, "paused on a snapshot (the job floods; End follows)"))
        self._tail_mode = msg.tail
        self.first = msg.first
        self._raw = msg.lines
        self._times = msg.times or []
        total = msg.total
        if msg.tail:
            # tail-only: the lines sit at the very bottom of the known log
            total = max(total, self.first + len(msg.lines))
            # the line count is an estimate that grows with every message of a flood; a new
            # virtual size means a layout pass of the whole screen (and a second frame for the
            # scrollbar), so while following keep the current one when the estimate is within
            # ~3 % of it, or within 2x of it for a second after the last change
            shown = self.virtual_size.height
            now = time.monotonic()
            if (self.follow and len(msg.lines) <= shown and self._tail_total == shown
                    and (abs(total - shown) <= shown >> 5
                         or (shown // 2 <= total <= 2 * shown and now - self._tail_resized < 1.0))):
                total = shown
            elif total != shown:
                self._tail_resized = now
            self.first = max(0, total - len(msg.lines))
            self._tail_total = total
        else:
            self._tail_total = -1
        self.total = total
        if total != self.virtual_size.height:
            self._set_virtual(total)
        if self.follow:
            self._scroll_bottom()
        self.refresh()

    @on(SearchDone)
    def _on_search_done(self, msg: SearchDone) -> None:
        msg.stop()
        if msg.generation != self.generation:
            return
        self._search_pending = None
        steps, self._search_steps = self._search_steps, []
        if msg.line is None:
            self.post_message(self.Status(self, f"no more matches for {msg.query!r}"))
            self.app.bell()
            return
        self.match_line = msg.line
        self.follow = False
        target = max(0, msg.line - self._page() // 3)
        self._programmatic += 1
        try:
            self.scroll_to(y=target, animate=False, immediate=True, force=True)
        finally:
            self._programmatic -= 1
        self._request(force=True)
        self.refresh()
        self.post_message(self.Status(self, f"match at line {msg.line + 1}"))
        if steps:  # pressed while this search ran: the next starts from this match
            self.search(msg.query, steps[0])
            self._search_steps[:0] = steps[1:]

    # --- search ---------------------------------------------------------------------

    def search(self, query: str, forward: bool = True) -> None:
        self.search_text = query
        if not query or self.reader is None:
            return
        if self._search_pending == (self.generation, query):
            self._search_steps.append(forward)
            return
        self._search_steps = []
        self._search_pending = (self.generation, query)
        if self.match_line is not None:
            start = self.match_line
        else:
            start = int(self.scroll_y) - (1 if forward else -self._page())
            start = max(-1, start)
        if forward and start < 0:
            start = 0
            # include the first line itself: search from "before line 0"
            if self.reader.index is not None and self.reader.index.line_count:
                raw = self._raw[:1]
                if raw and query.lower() in render_raw_line(raw[0]).plain.lower() and self.first == 0:
                    self.post_message(self.SearchDone(self.generation, query, 0, True))
                    return
        self.post_message(self.Status(self, f"searching for {query!r}…"))
        self.reader.search(query, start, forward)

    def clear_match(self) -> None:
        """Drop the highlight of the last match."""
        self.match_line = None
        self.refresh()

    # --- rendering ------------------------------------------------------------------

    def _filter_strip(self, i: int) -> Strip | None:
        """Row ``i`` of the filtered view: a gutter with the line number, the line, the
        matches highlighted; ``None`` rows are the separators between groups."""
        f = self._filter
        if f is None or not 0 <= i < len(f.rows):
            return None
        strip = self._fstrips.get(i)
        if strip is None:
            row = f.rows[i]
            if row is None:
                text = Text("        ┄", style="dim")
            else:
                text = Text(f"{row.line + 1:>7} ", style="bold yellow" if row.match else "dim")
                body = self._highlighted(render_raw_line(row.raw))
                if row.match and f.pattern.engine == "re2":  # linear: safe in the screen's thread
                    for start, end in f.pattern.spans(body.plain):
                        body.stylize("black on yellow", start, end)
                text.append_text(body)
            strip = Strip(list(text.render(self.app.console)), text.cell_len)
            if len(self._fstrips) > 4 * max(50, self._page()):
                self._fstrips.clear()
            self._fstrips[i] = strip
        return strip

    def _highlighted(self, text: Text) -> Text:
        """Apply the highlight rules (errors, warnings, URLs, the user's own) to one line."""
        plain = text.plain
        for rule in self.highlights:
            for start, end in rule.spans(plain):
                text.stylize(rule.style, start, end)
        return text

    def _strip_for(self, line_no: int) -> Strip | None:
        if self._filter is not None:
            return self._filter_strip(line_no)
        i = line_no - self.first
        if not (0 <= i < len(self._raw)):
            return None
        raw = self._raw[i]
        hit = line_no == self.match_line and bool(self.search_text)
        key = (raw, hit)
        strip = self._strips.get(key)
        if strip is not None:
            self._strips.move_to_end(key)
            return strip
        text = self._highlighted(render_raw_line(raw))
        if hit:
            low = text.plain.lower()
            q = self.search_text.lower()
            pos = low.find(q)
            while pos != -1:
                text.stylize("black on yellow", pos, pos + len(q))
                pos = low.find(q, pos + len(q))
        strip = Strip(list(text.render(self.app.console)), text.cell_len)
        if text.cell_len > self._max_width:
            self._max_width = min(text.cell_len, 4 * MAX_LINE_CHARS)
            self.call_later(self._set_virtual, self.total)
        self._strips[key] = strip
        # a few screenfuls (a flood turns the cache over on every update; each strip is a
        # dozen objects for the cyclic GC to walk)
        while len(self._strips) > max(200, 4 * self._page()):
            self._strips.popitem(last=False)
        return strip

    def render_line(self, y: int) -> Strip:
        gutter = self._gutter()
        if not gutter:
            return self._render_line(y, self.size.width)
        i = self.scroll_offset.y + y - self.first
        when = self._times[i] if 0 <= i < len(self._times) else None
        text = gutter_text(when) if 0 <= i < len(self._raw) else " " * gutter
        left = Strip([Segment(text, self.rich_style + _GUTTER_STYLE)], gutter)
        return Strip.join([left, self._render_line(y, max(1, self.size.width - gutter))])

    def _render_line(self, y: int, width: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        style = self.rich_style
        line_no = scroll_y + y
        strip = self._strip_for(line_no) if line_no >= 0 else None
        sel = self.selection()
        if strip is not None and sel is not None and sel[0] <= line_no <= sel[1]:
            strip = strip.apply_style(_SELECTED)
            return strip.apply_style(style).crop_extend(scroll_x, scroll_x + width, style + _SELECTED)
        if strip is None:
            note = ""
            if y == 0 and not self.session_id:
                note = " Select a job to see its output."
            elif y == 0 and self.session_id and self.total == 0 and not self._raw:
                note = " (no output yet)"
            if note:
                return Strip([Segment(note, style + Style(dim=True))]).extend_cell_length(width, style)
            return Strip.blank(width, style)
        return strip.apply_style(style).crop_extend(scroll_x, scroll_x + width, style)
