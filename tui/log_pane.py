"""The log pane: the selected job's on-disk output, rendered one viewport at a time.

The widget only renders and reacts: its :class:`~.log_reader.LogReader` thread reads the disk
and posts the raw lines of the window it was asked for; ``render_line`` turns those few lines
into styled strips (log_lines.py: escapes removed, colours kept; cached). Its pieces, each a
module of its own: the line selection (log_select.py), finding text (log_find.py) and the
filtered view (filter_view.py, over the scan of log_filter.py); output times (log_times.py).

* Following: while the view is at the bottom it follows the tail; scrolling up stops
  following, ``End`` resumes.
* Times: ``T`` shows when each line arrived in a gutter (``HH:MM:SS``); ``@`` jumps to the
  output of a time ("5m" ago, "06:30").
* Find: :meth:`LogPane.search` (Ctrl-F) scrolls to the next or previous match.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

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

from hermes_procs.core.registry.userregex import UserRegex

from .config import HighlightRule
from .filter_view import FilterView
from .log_filter import FilterProgress, filter_log
from .log_find import Finder
from .log_lines import MAX_LINE_CHARS, render_raw_line
from .log_reader import LogReader
from .log_select import LineSelection
from .log_times import GUTTER, TimeJumpScreen, gutter_text

__all__ = ["LogPane", "LogReader", "render_raw_line"]

_SELECTED = Style(reverse=True)
_GUTTER_STYLE = Style(dim=True)


# size: a Textual widget keeps its bindings, the actions they name and its message handlers on
# itself; what it reads, finds, selects and filters is in log_reader, log_find, log_select and
# filter_view.
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
        self._filter: FilterView | None = None
        self.highlights: tuple[HighlightRule, ...] = ()  # regex -> style, from the config
        self._fstrips: dict[int, Strip] = {}
        self._sel = LineSelection()
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
        self._find = Finder()
        self.job_ended = False  # the shown job has ended: an empty log has "no output", not "no output yet"
        self.updates = 0  # repaint-causing messages handled (for tests and benches)
        self.resizes = 0  # virtual size changes: each one is a layout pass of the screen

    # --- job selection --------------------------------------------------------------

    def set_ended(self, ended: bool) -> None:
        """The shown job has ended (or runs again): the note on an empty log follows."""
        if ended != self.job_ended:
            self.job_ended = ended
            if self.total == 0 and not self._raw:
                self.refresh()

    def show_job(self, session_id: str | None, jobdir: Path | None) -> None:
        """Switch to another job (None: nothing)."""
        if session_id == self.session_id and self.reader is not None:
            return
        self.stop_reader()
        self.generation += 1
        self._drop_filter()
        self.session_id = session_id
        self.jobdir = jobdir
        self._sel.clear()
        self.total = 0
        self.first = 0
        self._raw = []
        self._times = []
        self._strips.clear()
        self._max_width = 0
        self._find.match_line = None
        self._snapshot_mode = False
        self._tail_mode = False
        self._tail_total = -1
        self.follow = True
        self._set_virtual(0)
        if session_id and jobdir is not None:
            self.reader = LogReader(self.post_message, jobdir, self.generation)
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
        # reaching the bottom follows only when scrolled down to it: a paused view clamped to
        # the bottom by a shrinking line count (a flood's estimate corrected) stays paused
        at_bottom = round(new) >= self.max_scroll_y
        if not at_bottom and self.follow:
            self.follow = False
        elif at_bottom and not self.follow and new > old:
            self.follow = True
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
        if self._sel.active:
            return self._move_selection(-1)
        self.scroll_to(y=self.scroll_y - 1, animate=False, immediate=True, force=True)

    def action_scroll_down(self) -> None:
        if self._sel.active:
            return self._move_selection(1)
        self._scroll_down_by(1)

    def action_page_up(self) -> None:
        if self._sel.active:
            return self._move_selection(-self._page())
        self.scroll_to(y=self.scroll_y - self.scrollable_content_region.height, animate=False,
                       immediate=True, force=True)

    def action_page_down(self) -> None:
        if self._sel.active:
            return self._move_selection(self._page())
        self._scroll_down_by(self.scrollable_content_region.height)

    def _scroll_down_by(self, lines: int) -> None:
        """Scroll down; a key pressed at the bottom follows again (as End does)."""
        if self._filter is None and round(self.scroll_y) >= self.max_scroll_y and not self.follow:
            self.action_follow()
            return
        self.scroll_to(y=self.scroll_y + lines, animate=False, immediate=True, force=True)

    # --- filter mode: only the matching lines of the whole log -------------------------------

    @property
    def filtering(self) -> bool:
        return self._filter is not None

    def start_filter(self, pattern: UserRegex, context: int) -> None:
        """Show only the lines of the whole on-disk log that match ``pattern`` (with ``context``
        lines around each), scanned in a worker thread; the view fills in as it goes, and with
        a running job's new lines as they come."""
        if self.jobdir is None:
            return
        self.stop_reader()
        self.generation += 1
        self._sel.clear()
        self._drop_filter()
        self._filter = FilterView(pattern, context)
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
                       lambda: worker.is_cancelled or self._filter is not f, follow=True)

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
        f.add(msg.progress)
        if msg.progress.error:
            self.notify(str(msg.progress.error), title="Filter stopped", severity="error", markup=False, timeout=10)
        if msg.progress.rows:
            at_end = f.following and round(self.scroll_y) >= self.max_scroll_y  # as a followed log, it stays there
            self._set_virtual(len(f.rows))
            if at_end:
                self.scroll_end(animate=False, immediate=True, force=True)
            self.refresh()
        self._filter_status()

    def _filter_status(self) -> None:
        if self._filter is not None:
            self.post_message(self.Status(self, self._filter.status()))

    # --- selecting and copying lines -------------------------------------------------------

    def selection(self) -> tuple[int, int] | None:
        """The selected lines (first, last), inclusive."""
        return self._sel.lines()

    def action_select_lines(self) -> None:
        if self._filter is not None:
            self.notify("Clear the filter (Esc in the filter bar, or &) to select lines.", timeout=3)
            return
        if not self.total:
            return
        self.follow = False
        bottom = min(self.total - 1, int(self.scroll_y) + self._page() - 1)
        self._sel.start(bottom)
        self._selection_status()
        self.refresh()

    def _move_selection(self, delta: int) -> None:
        self._sel.move_to(self._sel.cursor + delta, self.total)
        cursor, top, page = self._sel.cursor, int(self.scroll_y), self._page()
        if not top <= cursor < top + page:  # keep the moving end in view
            y = cursor if cursor < top else cursor - page + 1
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
        if not self._sel.active:
            raise SkipAction()  # Esc means "back" further up
        self._sel.clear()
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

    @on(LogReader.JumpDone)
    def _on_jump_done(self, msg: LogReader.JumpDone) -> None:
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
        self._sel.start(line)
        self._sel.dragging = True
        self.capture_mouse()
        self.refresh()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        if not self._sel.dragging:
            return
        offset = event.get_content_offset_capture(self)
        top, page = int(self.scroll_y), self._page()
        line = top + offset.y
        if offset.y < 0 or offset.y >= page:  # dragging past an edge scrolls
            self.scroll_to(y=top + (-1 if offset.y < 0 else 1), animate=False, immediate=True, force=True)
        self._sel.move_to(line, self.total)
        if self.follow and self._sel.cursor != self._sel.anchor:
            self.follow = False
        self._selection_status()
        self.refresh()

    def on_mouse_up(self, event: events.MouseUp) -> None:
        if not self._sel.dragging:
            return
        self._sel.dragging = False
        self.release_mouse()
        if self._sel.anchor == self._sel.cursor:  # a click, not a drag
            self._sel.clear()
            self._follow_status()
            self.refresh()
            return
        self.action_copy_selection()  # as a terminal does: a drag copies

    # --- messages from the reader --------------------------------------------------------

    @on(LogReader.Lines)
    def _on_lines(self, msg: LogReader.Lines) -> None:
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

    @on(LogReader.SearchDone)
    def _on_search_done(self, msg: LogReader.SearchDone) -> None:
        msg.stop()
        if msg.generation != self.generation:
            return
        steps = self._find.done()
        if msg.line is None:
            self.post_message(self.Status(self, f"no more matches for {msg.query!r}"))
            self.app.bell()
            return
        self._find.match_line = msg.line
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
            self._find.steps[:0] = steps[1:]

    # --- search ---------------------------------------------------------------------

    @property
    def search_text(self) -> str:
        return self._find.text

    @property
    def match_line(self) -> int | None:
        """The line the last find landed on (highlighted)."""
        return self._find.match_line

    def search(self, query: str, forward: bool = True) -> None:
        """Find ``query`` from the last match, else from the view: down from its top line, or
        up from its bottom. While the pane follows the tail everything is above, so a new
        find then goes up from the bottom (the latest match first)."""
        self._find.text = query
        if self.follow and self.match_line is None:
            forward = False
        if not query or self.reader is None or not self._find.begin(self.generation, query, forward):
            return
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
                    self.post_message(LogReader.SearchDone(self.generation, query, 0, True))
                    return
        self.post_message(self.Status(self, f"searching for {query!r}…"))
        self.reader.search(query, start, forward)

    def clear_match(self) -> None:
        """Drop the highlight of the last match."""
        self._find.match_line = None
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
                note = " (no output)" if self.job_ended else " (no output yet)"
            if note:
                return Strip([Segment(note, style + Style(dim=True))]).extend_cell_length(width, style)
            return Strip.blank(width, style)
        return strip.apply_style(style).crop_extend(scroll_x, scroll_x + width, style)
