"""The jobs table: a DataTable keyed by session id, updated in place from sampler snapshots.

Rows are never cleared and rebuilt: each snapshot adds the new jobs, removes the ones that are
gone (or filtered out) and calls ``update_cell`` only for the cells whose text changed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import on
from textual.binding import Binding
from textual.cache import LRUCache
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, RowKey

from .sampler import JobRow
from .stack_view import is_header, state_text

__all__ = ["SORTS", "JobsTable", "fmt_bytes", "fmt_duration", "short_id"]

SORTS = ("newest", "oldest", "cpu", "memory", "quiet", "status", "name")


SHORT_ID = 6  # hex digits of the short id the table shows


def short_id(session_id: str) -> str:
    """The table's id: 6 hex digits of a job's id; `stack` for a stack's row."""
    return "stack" if is_header(session_id) else session_id.removeprefix("proc_")[:SHORT_ID]


def fmt_duration(seconds: float | None) -> str:
    """``42s``, ``17m``, ``3h05``, ``2d04``: coarse past a minute, so idle rows rarely change."""
    if seconds is None:
        return ""
    s = int(seconds)
    if s < 10:
        return f"{s}s"
    if s < 60:
        return f"{s - s % 5}s"  # 5 s steps: a quiet row changes every 5 s, not every second
    if s < 3600:
        return f"{s // 60}m"
    if s < 86400:
        return f"{s // 3600}h{(s % 3600) // 60:02d}"
    return f"{s // 86400}d{(s % 86400) // 3600:02d}"


def fmt_bytes(n: int | None) -> str:
    if n is None:
        return ""
    size = float(n)
    for unit in ("B", "K", "M", "G"):
        if size < 1024 or unit == "G":
            return f"{size:.0f}{unit}" if unit in ("B", "K") or size >= 100 else f"{size:.1f}{unit}"
        size /= 1024
    return f"{n:.0f}T"


def status_text(row: JobRow) -> Text:
    """The status cell; it starts with a space: the gap after the (ellipsized) name column."""
    if is_header(row.session_id):  # a stack's row: its state
        return state_text(row.label)
    if row.running:
        style = "bold yellow" if row.label == "stopped" else "bold green"
    elif row.label == "exited 0":
        style = "green"
    elif row.label.startswith(("exited", "ended by")):
        style = "bold red"
    elif row.label in ("lost", "unreachable"):
        style = "magenta"
    else:
        style = "yellow"  # killed / timed out
    label = "unreachable" if row.unreachable else row.label if row.label == "stopped" or not row.running else "running"
    label = label.removeprefix("ended by ")  # "SIGSEGV": the column holds " exited 137"
    return Text.assemble(" ", (label, "magenta" if row.unreachable else style))


class _IdCell(Text):
    """The id cell: shows the short id, remembers the full one (for sorting)."""

    def __init__(self, session_id: str) -> None:
        super().__init__(short_id(session_id), style="cyan")
        self.session_id = session_id


@dataclass(frozen=True)
class _Col:
    key: str
    label: str
    width: int  # content width; the table adds no padding, each column carries a 1-cell gap
    wide_only: bool = False  # hidden below WIDE columns
    hosts_only: bool = False  # shown only when jobs of remote hosts are in the table
    widest_only: bool = False  # hidden below WIDEST columns: the first to go on a narrower terminal


WIDE, WIDEST = 100, 120
COLUMNS = (
    _Col("id", "ID", 7),
    _Col("flags", "", 4),
    _Col("name", "NAME / COMMAND", 20),
    _Col("status", " STATUS", 12),  # " exited 137" and a gap
    _Col("pid", "PID", 8, wide_only=True),
    _Col("started", "STARTED", 9, wide_only=True),
    _Col("time", "TIME", 6),
    _Col("cpu", "CPU%", 6),
    _Col("rss", "RSS", 7),
    _Col("quiet", "QUIET", 6),
    _Col("ports", "PORTS", 12, widest_only=True),
    _Col("host", "HOST", 12, hosts_only=True),
)


class JobsTable(DataTable):
    """Jobs, one row per session id."""

    DEFAULT_CSS = """
    JobsTable { height: 1fr; }
    """

    HELP_TITLE = "Jobs"
    BINDINGS = [
        Binding("up", "cursor_up", "Up", show=False, tooltip="select a job (or click it)"),
        Binding("down", "cursor_down", "Down", show=False, tooltip="select a job (or click it)"),
        Binding("home", "scroll_top", "First", show=False, tooltip="the first job / the last job"),
        Binding("end", "scroll_bottom", "Last", show=False, tooltip="the first job / the last job"),
        Binding("pageup", "page_up", "Page up", show=False, tooltip="a page of jobs up / down"),
        Binding("pagedown", "page_down", "Page down", show=False, tooltip="a page of jobs up / down"),
        # the screen's action at once (not RowSelected, a message handled a turn later): the keys
        # typed right after Enter go to the pane or input bar it opens (tui/keyroute.py)
        Binding("enter", "screen.open_job", "Open", show=False,
                tooltip="PTY job: its terminal pane; pipe job: type into it; finished job: its log"),
    ]

    # bound to the screen's reactives (MainScreen.compose): the filter, the sort, the search
    sort_mode: reactive[str] = reactive("newest", repaint=False)
    show_finished: reactive[bool] = reactive(True, repaint=False)
    search: reactive[str] = reactive("", repaint=False)
    host_filter: reactive[str] = reactive("", repaint=False)  # "": every host, "local", or a host label
    show_hosts: reactive[bool] = reactive(False, repaint=False)  # the HOST column (remote hosts known)

    class Selected(Message):
        """The highlighted job changed (None: no job)."""

        def __init__(self, session_id: str | None) -> None:
            super().__init__()
            self.session_id = session_id

    def __init__(self, **kwargs) -> None:
        # rendered cells by position and look, kept across updates (see _render_cell); set
        # first: DataTable's constructor already clears caches
        self._cell_lines: dict[tuple, tuple] = {}
        super().__init__(cursor_type="row", zebra_stripes=False, cell_padding=0, **kwargs)
        self.rows_by_id: dict[str, JobRow] = {}
        self._cells: dict[str, tuple] = {}
        self._rows_shown: dict[str, JobRow] = {}
        self._looks: dict[str, tuple] = {}  # what each row's cells show, as plain values (_look)
        self._wide: bool | None = None
        self._last_selected: str | None = "<none>"
        self.host_names: dict[str, str] = {}  # host label -> short name (MainScreen fills it)
        self.groups: dict[str, str] = {}  # row id -> its stack's header id (tui/stack_view.py)
        self.hidden: set[str] = set()  # rows the stack view hides (folded stacks, earlier runs)
        # DataTable keys its render caches on a counter that every update bumps: past entries
        # are never hit again, and caches of 1,000-10,000 of them only keep garbage alive for
        # the cyclic GC to walk on every full collection (see HermesApp._settle_gc)
        for name, size in (("_cell_render_cache", 512), ("_row_render_cache", 256),
                           ("_row_renderable_cache", 256), ("_line_cache", 256)):
            if isinstance(getattr(self, name, None), LRUCache):
                setattr(self, name, LRUCache(size))

    def on_mount(self) -> None:
        for col in COLUMNS:
            self.add_column(col.label, width=col.width, key=col.key)
        self._fit_columns()

    def on_resize(self) -> None:
        self._fit_columns()

    def _fit_columns(self) -> None:
        width = self.size.width or 80
        wide = width >= WIDE
        fixed = 0
        for col in COLUMNS:
            if col.key == "name":
                continue
            shown = ((wide or not col.wide_only) and (width >= WIDEST or not col.widest_only)
                     and (self.show_hosts or not col.hosts_only))
            w = col.width if shown else 0
            self.columns[col.key].width = w  # type: ignore[index]
            fixed += w
        self.columns["name"].width = max(10, width - fixed - 2)  # type: ignore[index]
        self._wide = wide
        self._require_update_dimensions = True
        self.refresh()

    # --- data in ------------------------------------------------------------------------

    def shows(self, row: JobRow) -> bool:
        """Whether `row` passes the filters (not `visible`: that is Textual's own property)."""
        return self._filter()(row)

    def _filter(self) -> Callable[[JobRow], bool]:
        """Whether a row passes the filter, the search and the host filter (the reactives are
        read once: this runs for every job on every snapshot)."""
        finished, host, needle, hidden = self.show_finished, self.host_filter, self.search.lower(), self.hidden

        def passes(row: JobRow) -> bool:
            if row.session_id in hidden:
                return False
            if not finished and not row.running:
                return False
            if host and (row.host or "local") != host:
                return False
            if needle:
                hay = f"{row.name}\n{row.command}\n{row.session_id}\n{self.host_name(row.host)}".lower()
                return needle in hay
            return True

        return passes

    def set_host_names(self, names: dict[str, str]) -> None:
        """Show the HOST column, its hosts named so (label -> short name)."""
        if names != self.host_names:
            self.host_names = names
            self._rows_shown.clear()  # every host cell is drawn again
            self._looks.clear()
            self.refilter()
        self.show_hosts = True

    def host_name(self, label: str) -> str:
        """What the HOST column shows for a host label (the screen sets names from the config)."""
        return self.host_names.get(label) or label or "local"

    def _cells_for(self, row: JobRow, now: float) -> tuple:
        started = time.strftime("%H:%M:%S", time.localtime(row.started)) if row.started else ""
        cpu = _cpu_text(row.cpu)
        quiet = fmt_duration(row.silence) if row.running else ""
        quiet_style = "yellow" if (row.silence or 0) >= 60 else "dim"
        host = Text(self.host_name(row.host), style="magenta" if row.unreachable else "dim" if not row.host else "",
                    no_wrap=True, overflow="ellipsis")
        return (
            row.session_id,  # id cell never changes
            _flags(row).markup,
            _title(row),
            status_text(row),
            str(row.pid or ""),
            started,
            fmt_duration(row.uptime),
            cpu,
            fmt_bytes(row.rss) if row.running else "",
            Text(quiet, style=quiet_style),
            _ports_text(row),
            host,
        )

    def apply(self, rows: Iterable[JobRow], now: float | None = None) -> None:
        """Bring the table in line with ``rows``: add, remove, update changed cells only."""
        now = time.time() if now is None else now
        rows = list(rows)
        self.rows_by_id = {r.session_id: r for r in rows}
        passes = self._filter()
        wanted = {r.session_id: r for r in rows if passes(r)}
        keep_cursor = self.current_id()
        changed_order = self._drop_rows(wanted)
        for sid, row in wanted.items():
            shown = self._rows_shown.get(sid)
            if sid in self._cells and (shown is row or shown == row):
                continue  # nothing about this job changed (most finished jobs)
            self._rows_shown[sid] = row
            look = _look(row)
            if sid in self._cells and self._looks.get(sid) == look:
                continue  # new figures, same text (a running job's TIME moves once a minute)
            self._looks[sid] = look
            changed_order = self._put_row(sid, row, now) or changed_order
        if changed_order or self.sort_mode in ("cpu", "memory", "quiet"):
            self.resort(keep=keep_cursor)
        self._emit_selected()

    def _drop_rows(self, wanted: dict[str, JobRow]) -> bool:
        """Remove the rows of jobs no longer shown; True when any went."""
        gone = [sid for sid in self._cells if sid not in wanted]
        for sid in gone:
            self.remove_row(sid)
            del self._cells[sid]
            self._rows_shown.pop(sid, None)
            self._looks.pop(sid, None)
        return bool(gone)

    def _put_row(self, sid: str, row: JobRow, now: float) -> bool:
        """Add the job's row, or update the cells of it that changed (in place: no redraw of the
        table); True when the order may have changed (a new row, a change in the sort column)."""
        cells = self._cells_for(row, now)
        old = self._cells.get(sid)
        self._cells[sid] = cells
        if old is None:
            values = [_IdCell(sid), *(Text.from_markup(cell) if col.key == "flags" else cell
                                      for col, cell in zip(COLUMNS[1:], cells[1:], strict=True))]
            self.add_row(*values, key=sid)
            return True
        changed_order = False
        for col, new, prev in zip(COLUMNS[1:], cells[1:], old[1:], strict=True):
            if _differs(new, prev):
                self._set_cell(sid, col.key, Text.from_markup(new) if col.key == "flags" else new)
                changed_order = changed_order or col.key in self._sort_columns()
        return changed_order

    def _set_cell(self, sid: str, column: str, value: object) -> None:
        """``update_cell`` that redraws the row's line only: DataTable's redraws every line of
        the table (a running job's figures change every second; during a flood that was ~8 ms
        of each frame). Its line caches are keyed on ``_update_count``, which still moves."""
        row_key, column_key = RowKey(sid), ColumnKey(column)
        row_index = self._row_locations.get(row_key)
        if row_index is None or column_key not in self._column_locations:
            self.update_cell(row_key, column_key, value)  # its error, as before
            return
        self._data[row_key][column_key] = value
        self._update_count += 1
        self.refresh_row(row_index)

    def _sort_columns(self) -> tuple[str, ...]:
        return {"status": ("status",), "name": ("name",), "cpu": ("cpu",), "memory": ("rss",),
                "quiet": ("quiet",)}.get(self.sort_mode, ())

    def _sort_key(self, sid: str):
        """The sort's key; a stack's jobs follow its header row (the group sorts as its header)."""
        group = self.groups.get(sid)
        if group is not None and group in self.rows_by_id:
            return (*self._own_key(group), 1, *self._own_key(sid))
        return (*self._own_key(sid), 0)

    def _own_key(self, sid: str):
        row = self.rows_by_id.get(sid)
        if row is None:
            return (0,)
        mode = self.sort_mode
        if mode == "newest":
            return (-row.age,)
        if mode == "oldest":
            return (row.age,)
        if mode == "cpu":  # running jobs first: a finished one uses no CPU, whatever it last used
            return (not row.running, -(row.cpu or 0.0), -row.age)
        if mode == "memory":
            return (not row.running, -(row.rss or 0), -row.age)
        if mode == "quiet":
            return (-(row.silence if row.silence is not None else -1), -row.age)
        if mode == "status":
            return (_status_rank(row), -row.age)
        return (row.title.lower(), -row.age)

    def resort(self, keep: str | None = None) -> None:
        if not self.row_count:
            return
        keep = keep or self.current_id()
        desired = sorted(self._cells, key=self._sort_key)
        if desired != [row.key.value for row in self.ordered_rows]:
            self.sort("id", key=lambda cell: self._sort_key(cell.session_id))
        if keep and keep in self._cells:
            index = self.get_row_index(keep)
            if index != self.cursor_row:
                self.move_cursor(row=index, animate=False, scroll=True)

    def watch_sort_mode(self) -> None:
        self.resort()

    def watch_show_finished(self) -> None:
        self.refilter()

    def watch_search(self) -> None:
        self.refilter()

    def watch_host_filter(self) -> None:
        self.refilter()

    def watch_show_hosts(self) -> None:
        if self.is_mounted:
            self._fit_columns()

    def refilter(self) -> None:
        if self.is_mounted:
            self.apply(self.rows_by_id.values())

    # --- rendering ----------------------------------------------------------------------

    CELL_CACHE_MAX = 4096

    def _render_cell(self, row_index: int, column_index: int, base_style: Style, width: int,
                     cursor: bool = False, hover: bool = False):
        """DataTable keys its cell cache on a counter that every ``update_cell`` and ``sort``
        bumps, so one changed CPU figure (every second) or a new sort re-renders every visible
        cell through Rich (~0.2 ms each: the bulk of the frame after a key press, and of the
        app's CPU).  Here a cell is re-rendered only when its value object changed (cells are
        never mutated: ``apply`` puts new objects in); a cell that only moved (a sort) gets its
        old segments with the new row and column in the mouse metadata."""
        if column_index < 0:
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        try:
            column_key = self._column_locations.get_key(column_index)
            row_key = self._header_row_key if row_index < 0 else self._row_locations.get_key(row_index)
            if column_key is None or row_key is None:
                raise KeyError(column_index if column_key is None else row_index)
            value: object
            if row_index < 0:
                value = self.columns[column_key].label
                height = self.header_height
            else:
                value = self._data[row_key].get(column_key)
                height = self.rows[row_key].height
        except (KeyError, AttributeError):
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        key = (row_key, column_key, base_style, width, height, cursor, hover, self._show_hover_cursor,
               self._pseudo_class_state)
        hit = self._cell_lines.get(key)
        if hit is not None and hit[0] is value:
            if hit[1] == (row_index, column_index):
                return hit[2]
            meta = Style.from_meta({"row": row_index, "column": column_index})
            lines = [[Segment(seg.text, seg.style + meta if seg.style else None, seg.control) for seg in line]
                     for line in hit[2]]
        else:
            lines = super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
            if len(self._cell_lines) >= self.CELL_CACHE_MAX:
                self._cell_lines.clear()
        self._cell_lines[key] = (value, (row_index, column_index), lines)
        return lines

    def _clear_caches(self) -> None:
        super()._clear_caches()
        self._cell_lines.clear()

    def notify_style_update(self) -> None:
        self._cell_lines.clear()
        super().notify_style_update()

    # --- the rows on screen (the sampler re-reads these first) ------------------------------

    class Scrolled(Message):
        """Other rows came on screen (a scroll): their figures may be a few seconds old."""

    SCREEN_MARGIN = 10  # rows above and below the viewport counted as on screen

    def rows_on_screen(self) -> frozenset[str]:
        """Ids of the rows in the viewport, and SCREEN_MARGIN rows either side."""
        top = int(self.scroll_offset.y)
        rows = self.ordered_rows[max(0, top - self.SCREEN_MARGIN):top + self.size.height + self.SCREEN_MARGIN]
        return frozenset(row.key.value for row in rows if row.key.value is not None)

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if round(old_value) != round(new_value):
            self.post_message(self.Scrolled())

    # --- selection ----------------------------------------------------------------------

    def current_id(self) -> str | None:
        if not self.row_count:
            return None
        try:
            key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        except Exception:
            return None
        return key.value

    def current(self) -> JobRow | None:
        sid = self.current_id()
        return self.rows_by_id.get(sid) if sid else None

    def select_id(self, sid: str) -> None:
        if sid in self._cells:
            self.move_cursor(row=self.get_row_index(sid), animate=False)
        self._emit_selected()

    def _emit_selected(self) -> None:
        sid = self.current_id()
        if sid != self._last_selected:
            self._last_selected = sid
            self.post_message(self.Selected(sid))

    @on(DataTable.RowHighlighted)
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._emit_selected()


def _status_rank(row: JobRow) -> int:
    """The status sort, what needs a look first: waiting for input, running, failed (exited
    non-zero, timed out, lost...), killed, exited 0."""
    if row.running:
        return 0 if row.waiting else 1
    return {"killed": 3, "exited 0": 4}.get(row.label, 2)


def _cpu_text(cpu: float | None) -> str:
    return "" if cpu is None else f"{cpu:.0f}" if cpu >= 10 else f"{cpu:.1f}"


def _look(row: JobRow) -> tuple:
    """Everything JobsTable._cells_for shows of a row, as plain values: rows with equal looks
    have equal cells, so a sample that only moved the figures builds no cells (with 1,000 running
    jobs, most rows of a full re-read)."""
    return (row.pty, row.waiting, row.name, row.command, row.label, row.running, row.unreachable, row.pid,
            row.started, fmt_duration(row.uptime), _cpu_text(row.cpu), fmt_bytes(row.rss) if row.running else "",
            fmt_duration(row.silence) if row.running else "", (row.silence or 0) >= 60, row.host, row.ports,
            row.port if row.running else None, row.lease, row.member, row.restarts)


def _flags(row: JobRow) -> Text:
    """The FLAGS cell: P for a PTY job, a yellow ? while it waits for input, L for a running
    leased job (it ends with its owner: an agent's ephemeral job), K for one kept (pinned). An
    ended job has no mark: its lease no longer decides anything."""
    flags = Text()
    flags.append("P" if row.pty else " ", style="bold blue")
    flags.append("?" if row.waiting else " ", style="bold black on yellow" if row.waiting else "")
    lease = {"leased": ("L", "yellow"), "pinned": ("K", "green")}.get(row.lease if row.running else "", (" ", ""))
    flags.append(lease[0], style=lease[1])
    return flags


def _ports_text(row: JobRow) -> Text:
    """The PORTS cell: the ports a running job listens on; the one it was started with, dimmed,
    while it does not listen yet."""
    if row.ports:
        return Text(",".join(str(p) for p in row.ports), style="cyan", no_wrap=True, overflow="ellipsis")
    if row.running and row.port:
        return Text(str(row.port), style="dim", no_wrap=True)
    return Text("")


def _title(row: JobRow) -> Text:
    """The NAME cell: the name in bold and the command dimmed, or the command alone."""
    command = " ".join(row.command.split())
    title = Text(row.name, style="bold") if row.name else Text(command)
    if row.member:  # under its stack's header, with how often the stack restarted it
        title = Text.assemble("  ", title, (f" ↻{row.restarts}", "yellow") if row.restarts else "")
    if row.name:
        title.append("  " + command, style="dim")
    title.no_wrap = True
    title.overflow = "ellipsis"
    return title


def _differs(a, b) -> bool:
    if isinstance(a, Text) and isinstance(b, Text):
        return a.plain != b.plain or a.style != b.style or a.spans != b.spans
    return a != b
