"""The terminal pane: a live, typeable view of one PTY job inside the dashboard.

``TerminalPane(registry, session_id)`` attaches to the job's supervisor (``registry.stream``)
in a worker thread. Output is collected there and handed to the UI in coalesced batches;
the UI feeds it to the VT engine (tui/vt.py) and repaints only the rows that changed, at
most ``MAX_FPS`` times a second. The pane's size is the job's terminal size.

On attach the pane first rebuilds the job's current screen from the tail of its on-disk
log, then nudges the job with a resize so a full-screen program repaints.

Keys go to the job translated for the modes it asked for (tui/keys.py), sent with source
"human". Chords (tui/keys.py): Ctrl-] posts ``TerminalPane.Leave``, Ctrl-T posts
``TerminalPane.FullAttach``. When the job ends (or its supervisor dies) the pane says so,
posts ``TerminalPane.Ended`` and stops its stream.

Scrollback: Shift-PgUp/Shift-PgDn and the mouse wheel (unless the program asked for mouse
reports) page through the job's history, read from its on-disk log in a worker thread (with
its colours, as the log pane shows a line; a remote job's as plain text through
``registry.read_log``); the view holds still while output arrives; the bottom row says
``scrollback: N lines up · any key returns to live``. Any other key (which still goes to the
job), or Shift-PgDn past the bottom, returns to the live screen. A program on the alternate
screen (vim, less, htop) has no history: the pane says so instead.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from rich.segment import Segment
from rich.style import Style as RichStyle
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.message import Message
from textual.strip import Strip
from textual.timer import Timer
from textual.widget import Widget

from hermes_procs.core.registry import logstore
from hermes_procs.core.registry.interface import Registry

from .keys import FULL_ATTACH_KEY, LEAVE_KEY, paste_bytes, translate_key
from .log_lines import render_raw_line
from .vt import CELL_SAFE, VTEngine, safe_tail, scan_modes

_INDICATOR = RichStyle(reverse=True, bold=True)
MAX_FPS = 30
TAIL_BYTES = 256 * 1024  # recent output replayed on attach
MAX_PENDING = 4 * 1024 * 1024  # bytes waiting for the UI before the oldest are dropped
NUDGE_DELAY = 0.15  # seconds between the two halves of the resize nudge


def _read_tail(registry: Registry, session_id: str, end: int | None, limit: int = TAIL_BYTES) -> bytes:
    """Up to ``limit`` bytes of the job's output ending at absolute offset ``end`` (None:
    the end of the log): what came before a live stream that starts at ``end``."""
    try:
        jobdir = registry.job_dir(session_id)
        if end is None:
            return logstore.tail_bytes(jobdir, limit)
        return logstore.read_bytes(jobdir, max(0, end - limit), end)
    except Exception:  # an unknown or removed job: nothing to replay
        return b""


class _PaneMessage(Message):
    """A message about a terminal pane, naming it and its job."""

    def __init__(self, pane: TerminalPane) -> None:
        super().__init__()
        self.pane = pane
        self.session_id = pane.session_id

    @property
    def control(self) -> TerminalPane:
        return self.pane


# size: a Textual widget keeps its bindings, key translation and message handlers on itself;
# the VT engine is vt.py, the keys keys.py, the full-screen attach fullattach.py.
class TerminalPane(Widget, can_focus=True):
    """A terminal emulator view of one PTY job."""

    DEFAULT_CSS = """
    TerminalPane {
        width: 1fr;
        height: 1fr;
        min-height: 3;
        min-width: 10;
    }
    """

    HELP_TITLE = "Terminal pane (t)"
    # priority: checked before the key reaches on_key (which sends every other key to the job)
    BINDINGS = [
        Binding(LEAVE_KEY, "leave", "Leave", priority=True, tooltip="leave the terminal pane (back to the table)"),
        Binding(FULL_ATTACH_KEY, "full_attach", "Full screen", priority=True,
                tooltip="full-screen attach (exact terminal; detach with Ctrl-])"),
        Binding("shift+pageup", "scroll_back", "Scroll back", show=False, priority=True, id="terminal_scroll_back",
                tooltip="scroll back through the job's output (also the mouse wheel); any other key returns to live"),
        Binding("shift+pagedown", "scroll_forward", "Scroll forward", show=False, priority=True,
                id="terminal_scroll_forward",
                tooltip="scroll forward; past the bottom returns to the live screen"),
    ]

    class Leave(_PaneMessage):
        """The user pressed the leave chord (Ctrl-])."""

    class FullAttach(_PaneMessage):
        """The user asked for the full-screen attach (Ctrl-T)."""

    class Ended(Message):
        """The job's stream ended: the job exited, or its supervisor is gone.
        ``status`` is the registry's poll dict (or an error dict)."""

        def __init__(self, pane: TerminalPane, status: dict) -> None:
            super().__init__()
            self.pane = pane
            self.session_id = pane.session_id
            self.status = status

        @property
        def control(self) -> TerminalPane:
            return self.pane

    class _Output(Message):
        """Internal: the reader thread has bytes waiting."""

    class _Attached(Message):
        """Internal: the recent-output tail is ready; live bytes follow."""

        def __init__(self, tail: bytes, stream) -> None:
            super().__init__()
            self.tail = tail
            self.stream = stream

    class _History(Message):
        """Internal: log lines for the scrollback view (read in a worker)."""

        def __init__(self, generation: int, back: int, lines: list[Text], total: int) -> None:
            super().__init__()
            self.generation = generation
            self.back = back
            self.lines = lines
            self.total = total

    class _Gone(Message):
        """Internal: the stream ended or could not be opened."""

        def __init__(self, status: dict, note: str) -> None:
            super().__init__()
            self.status = status
            self.note = note

    def __init__(
        self,
        registry,
        session_id: str,
        *,
        source: str = "human",
        answer_queries: bool = True,
        nudge: bool = True,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self.registry = registry
        self.session_id = session_id
        self.source = source
        # While a client with input is attached the supervisor stops answering terminal
        # queries (DA, cursor position...): the pane's engine answers them, for live output
        # only (never for the replayed log tail).
        self.answer_queries = answer_queries
        self.nudge = nudge
        self.engine = VTEngine(24, 80)
        self.ended: dict | None = None
        self._stream = None
        self._lock = threading.Lock()
        self._pending = bytearray()
        self._skipped_modes: dict | None = None  # modes set by output dropped from _pending
        self._posted = False
        self._stop = threading.Event()
        self._attached = False
        self._last_paint = 0.0
        self._flush_timer: Timer | None = None
        self._unsent = bytearray()  # keys typed before the stream is open
        self._job_size: tuple[int, int] | None = None
        self._last_cursor: tuple[int, int] = (0, 0)
        self._thread: threading.Thread | None = None
        self.frames = 0  # repaints done (for tests / stats)
        self._size_cv = threading.Condition()
        self._want_size: tuple[int, int] | None = None
        self._want_nudge = False
        self._sizer: threading.Thread | None = None
        self._strips: dict[int, Strip] = {}  # rendered rows, dropped when a row changes
        self._strip_key: tuple = ()
        self.back = 0  # scrollback: lines of the log below the view (0: the live screen)
        self._history: list[Text] | None = None  # the log lines the scrollback view shows
        self._history_strips: dict[tuple[int, int], Strip] = {}  # (line, width) -> rendered
        self._history_index: logstore.LineIndex | None = None  # a local job's log, while scrolled back
        self._history_total: int | None = None  # log lines when scrolling back began (held still)
        self._history_gen = 0  # bumped by every scroll and by live(): only the latest read is shown
        self._target = 0  # the scrollback position asked for last (the read may be under way)
        self._alt_noted = 0.0  # when the pane last said the alternate screen has no scrollback

    # -- lifecycle -----------------------------------------------------------------------

    def on_mount(self) -> None:
        rows, cols = self._pane_size()
        self.engine.resize(rows, cols)
        self._thread = threading.Thread(
            target=self._reader, name=f"terminal-{self.session_id}", daemon=True
        )
        self._thread.start()

    def on_unmount(self) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop reading and close the stream (the job keeps running)."""
        self._stop.set()
        with self._size_cv:
            self._size_cv.notify_all()
        stream, self._stream = self._stream, None
        if stream is not None:
            try:
                stream.close()
            except Exception:
                pass

    def _pane_size(self) -> tuple[int, int]:
        size = self.content_size if self.is_mounted else self.size
        rows, cols = size.height, size.width
        if rows < 1 or cols < 1:
            return 24, 80
        return rows, cols

    # -- reader thread -------------------------------------------------------------------

    def _reader(self) -> None:
        reg, sid = self.registry, self.session_id
        stream = self._open_stream()
        if isinstance(stream, dict):  # nothing live to attach to: show the log and the outcome
            self._post(self._Attached(_read_tail(reg, sid, None), None))
            self._post(self._Gone(self._final_status(), stream.get("error", "")))
            return
        self._stream = stream
        try:
            if self._stop.is_set():
                return
            self._post(self._Attached(_read_tail(reg, sid, getattr(stream, "offset", None)), stream))
            self._pump(stream)
        finally:
            try:
                stream.close()
            except Exception:
                pass
        if not self._stop.is_set():
            self._post(self._Gone(self._final_status(), ""))

    def _open_stream(self) -> Any:
        """A live stream with input (registry.stream: a local or a remote one), or a dict with
        status and error when the job has finished, is unknown, or its supervisor cannot be
        reached."""
        try:
            info = self.registry.poll(self.session_id)
        except Exception:
            info = {}
        if isinstance(info, dict) and info.get("status") not in (None, "running"):
            return {"status": info.get("status"), "error": info.get("error", "")}
        try:
            return self.registry.stream(self.session_id, input=True, source=self.source)
        except Exception as exc:  # SupervisorGone or anything else: show the log
            return {"status": "error", "error": str(exc) or type(exc).__name__}

    def _pump(self, stream: Any) -> None:
        """Move the job's output into _pending until it ends or the pane stops; one _Output
        message wakes the UI thread per batch (it takes all that is pending)."""
        while not self._stop.is_set():
            try:
                data = stream.read(0.25)
            except Exception:
                data = b""
            if data is None:
                continue
            if not data:
                return
            with self._lock:
                self._pending += data
                if len(self._pending) > MAX_PENDING:
                    self._trim_pending()
                post = not self._posted
                self._posted = True
            if post:
                self._post(self._Output())

    def _trim_pending(self) -> None:
        """The UI is far behind: keep only what rebuilds the last screen (lock held)."""
        data = bytes(self._pending)
        cut, tail = safe_tail(data, self.engine.rows, self.engine.cols)
        if cut:
            self._skipped_modes = scan_modes(data[:cut], self._skipped_modes or {})
            self._pending = bytearray(tail)

    def _final_status(self) -> dict:
        status: dict = {}
        for _ in range(20):  # the exit record lands right after the stream ends
            try:
                status = self.registry.poll(self.session_id)
            except Exception as exc:
                return {"status": "error", "error": str(exc)}
            if not isinstance(status, dict) or status.get("status") != "running":
                break
            if self._stop.wait(0.1):
                break
        return status if isinstance(status, dict) else {"status": "error"}

    def _post(self, message: Message) -> None:
        if not self._stop.is_set():
            try:
                self.post_message(message)
            except Exception:
                pass

    # -- UI side -------------------------------------------------------------------------

    def on_terminal_pane__attached(self, message: _Attached) -> None:
        message.stop()
        self._attached = True
        if message.tail:
            self.engine.feed(message.tail, replies=False)
            self.engine.take_replies()
        self._repaint()
        if message.stream is not None:
            if self._unsent:
                self._send(bytes(self._unsent))
                self._unsent.clear()
            # Always nudge on attach: the rebuilt screen may be stale or partial, and a
            # program on the alternate screen may have entered it before the replayed tail.
            self._sync_size(nudge=self.nudge, force=True)

    def on_terminal_pane__output(self, message: _Output) -> None:
        message.stop()
        if self._flush_timer is not None:
            return
        wait = self._last_paint + 1.0 / MAX_FPS - time.monotonic()
        if wait > 0:
            self._flush_timer = self.set_timer(wait, self._flush)
        else:
            self._flush()

    def on_terminal_pane__gone(self, message: _Gone) -> None:
        message.stop()
        self._flush()
        self.ended = message.status
        self._stream = None
        st = message.status or {}
        if st.get("status") == "exited":
            reason = st.get("completion_reason") or "exited"
            code = st.get("exit_code")
            if reason == "lost":
                note = "[supervisor gone: job lost]"
            elif reason == "exited":
                note = f"[process exited with code {code}]"
            else:
                note = f"[process {reason}, exit code {code}]"
        elif st.get("status") == "running":
            note = "[stream ended: the job's supervisor is not answering]"
        else:
            note = f"[cannot attach: {message.note or st.get('error') or 'unknown error'}]"
        self.engine.feed(b"\x1b[0m\r\n\x1b[7m" + note.encode() + b"\x1b[0m", replies=False)
        self._repaint()
        self.post_message(self.Ended(self, st))

    def _flush(self, answer: bool = True) -> None:
        self._flush_timer = None
        with self._lock:
            data = bytes(self._pending)
            self._pending.clear()
            self._posted = False
            skipped, self._skipped_modes = self._skipped_modes, None
        if skipped is not None:
            self.engine.skip(skipped)
        if data:
            self.engine.feed(data)
            replies = self.engine.take_replies()
            if replies and self.answer_queries and answer:
                self._send(replies)
        self._repaint()

    def _repaint(self) -> None:
        dirty = self.engine.take_dirty()
        cx, cy, _ = self.engine.cursor
        if (cx, cy) != self._last_cursor:
            dirty.add(self._last_cursor[1])
            dirty.add(cy)
            self._last_cursor = (cx, cy)
        self._last_paint = time.monotonic()
        if not dirty:
            return
        for y in dirty:
            self._strips.pop(y, None)
        self.frames += 1
        width = self.size.width
        if len(dirty) > self.engine.rows // 2:
            self.refresh()
            return
        for y in dirty:
            self.refresh(Region(0, y, width, 1))

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if self.back:
            return self._history_line(y, width)
        show_cursor = self.has_focus and self.ended is None
        key = (width, self.engine.rows, self.engine.cols, show_cursor)
        if key != self._strip_key:
            self._strips.clear()
            self._strip_key = key
        strip = self._strips.get(y)
        if strip is None:
            if y < self.engine.rows:
                strip = self.engine.render_line(y, width, show_cursor=show_cursor)
            else:
                strip = Strip([Segment(" " * width)], width)
            self._strips[y] = strip
        return strip

    def _history_line(self, y: int, width: int) -> Strip:
        """Row ``y`` of the scrollback view: log lines, the indicator on the bottom row."""
        rows = self.engine.rows
        if y == rows - 1:
            n = self.back
            note = f" scrollback: {n} line{'s' * (n != 1)} up · any key returns to live "
            return Strip([Segment(note.ljust(width)[:width], _INDICATOR)], width)
        lines = self._history or []
        i = y - (rows - 1 - len(lines))  # the lines sit at the bottom, above the indicator
        if not 0 <= i < len(lines):
            return Strip.blank(width)
        strip = self._history_strips.get((i, width))
        if strip is None:
            text = lines[i]
            strip = Strip(list(text.render(self.app.console)), text.cell_len).crop_extend(0, width, None)
            self._history_strips[(i, width)] = strip
        return strip

    def get_content_width(self, container: Size, viewport: Size) -> int:
        return self.engine.cols

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return self.engine.rows

    # -- size ----------------------------------------------------------------------------

    def on_resize(self, event: events.Resize) -> None:
        rows, cols = self._pane_size()
        self.engine.resize(rows, cols)
        self.refresh()
        if self._attached and self._stream is not None:
            self._sync_size(nudge=False)

    def resync(self) -> None:
        """Catch up after something else had the job (a full-screen attach): take the output
        that arrived meanwhile without answering its queries (that terminal did), give the
        job the pane's size again and nudge it to repaint."""
        self._flush(answer=False)
        self._job_size = None
        if self._attached and self._stream is not None:
            self._sync_size(nudge=True, force=True)

    def _sync_size(self, nudge: bool, force: bool = False) -> None:
        """Give the job the pane's size; with ``nudge``, change it and back so a
        full-screen program gets SIGWINCH and repaints even if the size is the same."""
        rows, cols = self._pane_size()
        want = (rows, cols)
        do_nudge = nudge and (force or self.engine.modes.alt_screen)
        if want == self._job_size and not do_nudge:
            return
        self._job_size = want
        with self._size_cv:
            self._want_size = want
            self._want_nudge = self._want_nudge or do_nudge
            self._size_cv.notify()
        if self._sizer is None:
            self._sizer = threading.Thread(target=self._size_worker, name="terminal-resize",
                                           daemon=True)
            self._sizer.start()

    def _size_worker(self) -> None:
        """Applies size requests in order, off the UI thread; always ends on the latest."""
        applied = None
        while not self._stop.is_set():
            with self._size_cv:
                while not self._stop.is_set() and not self._want_nudge and self._want_size == applied:
                    self._size_cv.wait(0.5)
                if self._stop.is_set():
                    return
                want, nudge = self._want_size, self._want_nudge
                self._want_nudge = False
            if want is None:  # a nudge always comes with a size; nothing to apply yet
                continue
            rows, cols = want
            try:
                if nudge:
                    self.registry.resize(self.session_id, rows, max(1, cols - 1))
                    if self._stop.wait(NUDGE_DELAY):
                        return
                    with self._size_cv:  # a newer size may have come meanwhile
                        want = self._want_size or want
                        rows, cols = want
                self.registry.resize(self.session_id, rows, cols)
            except Exception:
                pass
            applied = want

    # -- input ---------------------------------------------------------------------------

    def _send(self, data: bytes) -> bool:
        if not data or self.ended is not None:
            return False
        stream = self._stream
        if stream is None or not self._attached:
            self._unsent += data
            return True
        try:
            stream.send(data)
            return True
        except OSError:
            return False

    def send_text(self, text: str) -> None:
        """Type text into the job as if pasted (bracketed when the job asked for it)."""
        self._send(paste_bytes(text, self.engine.modes))

    def action_leave(self) -> None:
        self.post_message(self.Leave(self))

    def action_full_attach(self) -> None:
        self.post_message(self.FullAttach(self))

    # -- scrollback --------------------------------------------------------------------------

    def action_scroll_back(self, lines: int = 0) -> None:
        """Page (or ``lines``) back through the job's history."""
        if self.engine.modes.alt_screen and not self.back:
            self._no_scrollback()
            return
        self._scroll(self._target + (lines or self._page_step()))

    def action_scroll_forward(self, lines: int = 0) -> None:
        """Page (or ``lines``) forward; past the bottom, the live screen."""
        if self._target:
            self._scroll(self._target - (lines or self._page_step()))

    def _page_step(self) -> int:
        return max(1, self.engine.rows - 2)

    def _no_scrollback(self) -> None:
        now = time.monotonic()
        if now - self._alt_noted > 3.0:  # the wheel would repeat it a dozen times a second
            self._alt_noted = now
            self.notify("No scrollback: the program is on the alternate screen (vim, less, htop "
                        "keep their own history).", title="Terminal", timeout=4)

    def _scroll(self, back: int) -> None:
        if back <= 0:
            self.live()
            return
        count = max(1, self.engine.rows - 1)
        total = self._history_total
        if total is not None:
            back = min(back, max(1, total - count))
        self._history_gen += 1
        self._target = back
        gen = self._history_gen
        self.run_worker(lambda: self._read_history(gen, back, count, total), thread=True, exclusive=True,
                        group="scrollback")

    def _read_history(self, gen: int, back: int, count: int, total: int | None) -> None:
        """Worker: the ``count`` log lines that end ``back`` lines above the end of the log
        (``total``: the log's lines when scrolling back began; None: now)."""
        try:
            if total is None:
                total = self._history_lines(None, 0)[0]
                back = min(back, max(1, total - count))
            first = max(0, total - back - count)
            last = total - back  # the view's bottom line is last - 1
            lines = self._history_lines(first, last - first)[1] if last > 0 else []
        except Exception:  # a removed job, a host gone: stay where we are
            return
        self._post(self._History(gen, back, lines, total))

    def _history_lines(self, first: int | None, count: int) -> tuple[int, list[Text]]:
        """(lines in the log, lines ``first .. first+count-1`` styled); ``first`` None: the count
        only.  A local job's raw lines keep their colours; a remote job's come as plain text."""
        try:
            jobdir = self.registry.job_dir(self.session_id)
        except Exception:  # a remote job: the registry reads its log over the connection
            jobdir = None
        if jobdir is None:
            if first is None:
                return int(self.registry.read_log(self.session_id, limit=1).get("total_lines") or 0), []
            lines: list[str] = []
            while True:  # an answer holds at most 1 MiB of lines: ask on for the rest of the window
                got = self.registry.read_log(self.session_id, offset=first + len(lines),
                                             limit=max(1, count - len(lines)))
                lines += (got.get("output") or "").split("\n")
                if not got.get("capped") or len(lines) >= count:
                    return 0, [Text(line.translate(CELL_SAFE), no_wrap=True) for line in lines]
        idx = self._history_index
        if idx is None:  # indexed once per scrollback: later pages read only their lines
            idx = self._history_index = logstore.LineIndex(jobdir)
        if first is None:
            return idx.line_count, []
        return idx.line_count, [render_raw_line(raw) for raw in idx.read_raw_lines(first, count, max_bytes=64 << 10)]

    def on_terminal_pane__history(self, message: _History) -> None:
        message.stop()
        if message.generation != self._history_gen:
            return  # a later scroll, or the live screen, was asked for meanwhile
        self.back, self._history, self._history_total = message.back, message.lines, message.total
        self._history_strips.clear()
        self._target = message.back
        self.refresh()

    def live(self) -> None:
        """Back to the live screen (from the scrollback view)."""
        self._history_gen += 1
        self._target = 0
        if self.back or self._history_total is not None:
            self.back, self._history, self._history_total = 0, None, None
            self._history_strips.clear()
            self.refresh()
        idx, self._history_index = self._history_index, None
        if idx is not None:
            idx.release()  # its pinned segments (a rotated-out one keeps its disk space while open)

    def check_consume_key(self, key: str, character: str | None) -> bool:
        """Every key goes to the job (tui/keyroute.py asks before it runs a binding, the footer
        before it shows one) except the priority keys of the app and the screen (Ctrl-Q
        quits); the pane's own (Ctrl-], Ctrl-T, Shift-PgUp/PgDn) are checked before this."""
        if key in self._passed_keys():
            return False
        if character is None and "+" not in key:
            return True  # a key name without its character (the footer asks so): "slash", "f3"
        return translate_key(key, character, self.engine.modes) is not None

    def _passed_keys(self) -> set[str]:
        return {key for node in (self.screen, self.app) for key, bindings in node._bindings.key_to_bindings.items()
                if any(binding.priority for binding in bindings)}

    async def on_key(self, event: events.Key) -> None:
        self.live()  # any key returns to the live screen (and still goes to the job)
        data = translate_key(event.key, event.character, self.engine.modes)
        if data is None:
            return
        if data == b"\r" and getattr(self._stream, "pty", True) is False:
            data = b"\n"  # a pipe job reads lines
        event.stop()
        event.prevent_default()
        self._send(data)

    def on_paste(self, event: events.Paste) -> None:
        event.stop()
        event.prevent_default()
        self.send_text(event.text)

    # -- mouse: forwarded only when the program asked for mouse reports ---------------------

    _BUTTONS = {1: 0, 2: 1, 3: 2}

    def _mouse(self, event: events.MouseEvent, button: int, kind: str) -> None:
        if self.ended is not None or not self.engine.modes.mouse:
            return
        offset = event.get_content_offset(self)
        if offset is None:
            return
        mods = frozenset(m for m in ("shift", "meta", "ctrl") if getattr(event, m, False))
        data = self.engine.mouse(offset.x, offset.y, button, kind, mods)
        if data:
            event.stop()
            self._send(data)

    def on_mouse_down(self, event: events.MouseDown) -> None:
        self._mouse(event, self._BUTTONS.get(event.button, 0), "press")

    def on_mouse_up(self, event: events.MouseUp) -> None:
        self._mouse(event, self._BUTTONS.get(event.button, 0), "release")

    def on_mouse_move(self, event: events.MouseMove) -> None:
        self._mouse(event, self._BUTTONS.get(event.button, 0), "move")

    WHEEL_LINES = 3  # lines a notch of the wheel scrolls back

    def on_mouse_scroll_up(self, event: events.MouseScrollUp) -> None:
        if self.engine.modes.mouse and not self.back:
            self._mouse(event, 64, "press")
            return
        event.stop()
        self.action_scroll_back(self.WHEEL_LINES)

    def on_mouse_scroll_down(self, event: events.MouseScrollDown) -> None:
        if self.engine.modes.mouse and not self.back:
            self._mouse(event, 65, "press")
            return
        event.stop()
        self.action_scroll_forward(self.WHEEL_LINES)

    def on_focus(self, event: events.Focus) -> None:
        cy = self.engine.cursor[1]
        self.refresh(Region(0, cy, self.size.width, 1))

    def on_blur(self, event: events.Blur) -> None:
        cy = self.engine.cursor[1]
        self.refresh(Region(0, cy, self.size.width, 1))

    # -- conveniences for tests and the app ---------------------------------------------

    def screen_text(self) -> str:
        return self.engine.screen_text()
