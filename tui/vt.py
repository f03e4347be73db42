"""A small terminal-emulator engine interface for the dashboard's terminal pane.

The pane talks only to :class:`VTEngine`; the emulator behind it is bittty (chosen over
pyte, see docs/terminal.md for the numbers). The interface:

- ``feed(data: bytes)``: output of the job. Huge chunks are never pushed through the
  emulator whole: only the last screenfuls are fed, after replaying the terminal modes the
  skipped part changed (``hermes_procs.core.registry.screen.prepare``, shared with ``screen(id)``).
- ``resize(rows, cols)``
- ``take_dirty() -> set[int]``: rows changed since the last call.
- ``cursor -> (x, y, visible)``
- ``modes`` -> :class:`Modes` (DECCKM, bracketed paste, alternate screen, keypad).
- ``render_line(y) -> Strip`` (Textual) with colours; ``line_text(y)`` / ``screen_text()``
  for tests and plain views.

Nothing here touches the disk, a socket or Textual's event loop; it is safe to use from a
worker thread as long as one thread at a time calls it (the pane keeps it on the UI thread).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from bittty import Board
from bittty.style import Style as BStyle
from rich.color import Color as RichColor
from rich.segment import Segment
from rich.style import Style as RichStyle
from textual.strip import Strip

from hermes_procs.core.registry.screen import ReplySink, prepare, replay_modes, safe_tail, scan_modes

from .legible import readable

__all__ = ["CELL_SAFE", "ENGINE_NAME", "Modes", "VTEngine", "safe_tail", "scan_modes"]

ENGINE_NAME = "bittty"


@dataclass(frozen=True)
class Modes:
    """Terminal modes a key translator needs."""

    app_cursor: bool = False  # DECCKM (?1): arrows send ESC O A instead of ESC [ A
    bracketed_paste: bool = False  # ?2004: wrap pastes in ESC[200~ ... ESC[201~
    alt_screen: bool = False  # ?1049 / ?1047 / ?47
    app_keypad: bool = False  # DECKPAM (ESC =)
    cursor_visible: bool = True  # ?25
    mouse: bool = False  # the program asked for mouse reports (?9/1000/1002/1003)


def _rich_color(c) -> RichColor | None:
    if c is None or c.mode == "default":
        return None
    if c.mode == "indexed":
        return RichColor.from_ansi(int(c.value) & 0xFF)
    r, g, b = c.value
    return RichColor.from_rgb(r, g, b)


@lru_cache(maxsize=4096)
def _padding(used: int, width: int, cursor_x: int) -> list[Segment]:
    """Blank cells from column `used` to `width`, with the cursor among them when it is there."""
    pad = width - used
    if not used <= cursor_x < width:
        return [Segment(" " * pad)]
    before = cursor_x - used
    out = [Segment(" " * before)] if before else []
    out.append(Segment(" ", _CURSOR_STYLE))
    if pad - before - 1 > 0:
        out.append(Segment(" " * (pad - before - 1)))
    return out


@lru_cache(maxsize=4096)  # a screen has few styles; readable() costs ~2 us a cell
def _rich_style(style: BStyle) -> RichStyle:
    color, bgcolor = readable(_rich_color(style.fg), _rich_color(style.bg))  # 30;40 hid text from the human
    return RichStyle(
        color=color,
        bgcolor=bgcolor,
        bold=style.bold,
        dim=style.dim,
        italic=style.italic,
        underline=style.underline,
        blink=style.blink,
        reverse=style.reverse,
        strike=style.strike,
        # no conceal (SGR 8): it hid from the human the text log, search and the agent see
        overline=style.overline,
    )


_CURSOR_STYLE = RichStyle(reverse=True)
# Control characters (C0, DEL, C1), bidi controls and the line/paragraph separators never reach
# the real terminal from a cell (a cell holds one character: U+FFFD stands in for it, the
# columns stay as they were).
CELL_SAFE = {i: "\ufffd" for i in [*range(0x20), *range(0x7F, 0xA0), *range(0x202A, 0x202F),
                                     0x2028, 0x2029, *range(0x2066, 0x206A)]}


class VTEngine:
    """Screen state of one terminal: feed bytes, read rows."""

    def __init__(self, rows: int = 24, cols: int = 80) -> None:
        self.rows = max(1, rows)
        self.cols = max(1, cols)
        self._board = Board(width=self.cols, height=self.rows)
        self._replies = ReplySink()
        self._board.host.attach(self._replies)
        self._seen = self._board.blitter.current_page.observe()
        self._page = self._board.blitter.current_page
        self._all_dirty = True
        self.bytes_fed = 0
        self.bytes_skipped = 0

    # -- input ---------------------------------------------------------------------------

    def feed(self, data: bytes, *, replies: bool = True) -> None:
        """Feed job output. ``replies=False`` drops answers to queries found in it (used
        when replaying old output from the log: the job asked those long ago)."""
        if not data:
            return
        cut, tail = prepare(data, self.rows, self.cols, self.modes.alt_screen)
        if cut:
            self.bytes_skipped += cut
            self._all_dirty = True
        self._replies.enabled = replies
        try:
            self._board.feed_host_data(tail)
        finally:
            self._replies.enabled = True
        self.bytes_fed += len(data)

    def skip(self, modes: dict) -> None:
        """Account for output that was dropped before reaching the engine (the caller kept
        only a tail): reset attributes and apply the modes it set (see :func:`scan_modes`)."""
        self._board.feed_host_data(replay_modes(modes, self.modes.alt_screen))
        self._all_dirty = True

    def take_replies(self) -> bytes:
        """Bytes the emulator wants to send back to the job (answers to DA/DSR queries)."""
        out = bytes(self._replies.pending)
        self._replies.pending.clear()
        return out

    def resize(self, rows: int, cols: int) -> None:
        rows, cols = max(1, rows), max(1, cols)
        if (rows, cols) == (self.rows, self.cols):
            return
        self.rows, self.cols = rows, cols
        self._board.resize(cols, rows)
        self._all_dirty = True

    def reset(self) -> None:
        """Forget everything (a fresh screen)."""
        self._board = Board(width=self.cols, height=self.rows)
        self._replies = ReplySink()
        self._board.host.attach(self._replies)
        self._page = self._board.blitter.current_page
        self._seen = self._page.observe()
        self._all_dirty = True

    # -- state ---------------------------------------------------------------------------

    def take_dirty(self) -> set[int]:
        """Row indexes changed since the previous call."""
        page = self._board.blitter.current_page
        if self._all_dirty or page is not self._page:
            rows = set(range(self.rows))
        else:
            rows = {y for y in page.dirty_rows(self._seen) if y < self.rows}
        self._page = page
        self._all_dirty = False
        self._seen = page.observe()
        return rows

    @property
    def dirty_rows(self) -> set[int]:
        """Rows changed since the last :meth:`take_dirty` (does not reset)."""
        page = self._board.blitter.current_page
        if self._all_dirty or page is not self._page:
            return set(range(self.rows))
        return {y for y in page.dirty_rows(self._seen) if y < self.rows}

    @property
    def cursor(self) -> tuple[int, int, bool]:
        b = self._board
        return b.cursor.x, b.cursor.y, bool(b.modes.cursor_visible)

    @property
    def modes(self) -> Modes:
        b = self._board
        return Modes(
            app_cursor=bool(b.modes.cursor_application_mode),
            bracketed_paste=bool(b.modes.bracketed_paste),
            alt_screen=bool(b.blitter.in_alt_screen),
            app_keypad=bool(getattr(b.modes, "application_keypad", False)),
            cursor_visible=bool(b.modes.cursor_visible),
            mouse=self._mouse_on(),
        )

    def _mouse_on(self) -> bool:
        try:
            from bittty.devices.modes import MouseProtocol

            return self._board.mouse.protocol not in (MouseProtocol.OFF, MouseProtocol.LOCATOR)
        except Exception:
            return False

    def mouse(self, x: int, y: int, button: int, event: str, modifiers: frozenset[str] = frozenset(),
              ) -> bytes:
        """Bytes reporting a mouse event (0-based cell x, y; button 0 left, 1 middle,
        2 right, 64/65 wheel up/down; event "press", "release" or "move") in the protocol and
        encoding the program asked for; b"" when it asked for none. On the alternate screen
        without mouse reporting, the wheel becomes arrow keys (xterm's alternate scroll)."""
        sink = self._replies
        before = len(sink.pending)
        self._board.input_mouse(x + 1, y + 1, button, event, set(modifiers))
        data = bytes(sink.pending[before:])
        del sink.pending[before:]
        return data

    @property
    def title(self) -> str:
        t = getattr(self._board, "title", None)
        return str(getattr(t, "title", "") or "") if t is not None else ""

    # -- output --------------------------------------------------------------------------

    def _row(self, y: int):
        page = self._board.blitter.current_page
        if 0 <= y < page.height:
            return page.grid[y]
        return ()

    def line_text(self, y: int) -> str:
        return "".join(cell[1] for cell in self._row(y)).rstrip()

    def screen_text(self) -> str:
        """The visible screen as text, trailing blanks and blank bottom rows removed."""
        lines = [self.line_text(y) for y in range(self.rows)]
        while lines and not lines[-1]:
            lines.pop()
        return "\n".join(lines)

    def cell_style(self, x: int, y: int) -> RichStyle:
        row = self._row(y)
        if 0 <= x < len(row):
            return _rich_style(row[x][0])
        return RichStyle()

    def render_line(self, y: int, width: int | None = None, *, show_cursor: bool = True) -> Strip:
        """Row ``y`` as a Textual Strip, ``width`` cells wide (default: the engine's)."""
        width = self.cols if width is None else width
        row = self._row(y)
        cx, cy, visible = self.cursor
        cursor_x = cx if (show_cursor and visible and cy == y) else -1
        segments: list[Segment] = []
        run: list[str] = []
        run_style = None
        used = 0
        limit = min(len(row), width)
        # one pass over the cells, joining runs of one style (this runs for every row on every
        # repaint of the terminal pane: no call a cell beyond the cached style lookup)
        for x in range(limit):
            bstyle, ch = row[x]
            if ch == "":  # continuation column of a wide glyph
                continue
            if x + 1 == limit and x + 1 < len(row) and row[x + 1][1] == "":
                ch = " "  # a wide glyph cut by the pane's edge
            style = _rich_style(bstyle)
            if x == cursor_x:
                style = style + _CURSOR_STYLE
            if style is not run_style and style != run_style:
                if run:
                    segments.append(Segment("".join(run).translate(CELL_SAFE), run_style))
                run = []
                run_style = style
            run.append(ch)
            used = x + 1
        if run:
            segments.append(Segment("".join(run).translate(CELL_SAFE), run_style))
        if used < width:
            segments.extend(_padding(used, width, cursor_x))
        return Strip(segments, width)
