"""The two one-line bars of the main screen, each a widget drawn from its reactives.

* :class:`TopBar`: how many jobs run / wait for input, the table's filter, sort and search (bound
  to the :class:`~.main_screen.MainScreen` reactives with ``data_bind``), and the home.
* :class:`DetailTitle`: the selected job's id, name, command, status (``rerun of <id>`` /
  ``rerun as <id>`` when it was started again) and the log pane's state; the command gives way
  when the width is short, the state never does.

And the footer (:class:`KeyFooter`): Textual's, fitted to the width so that ``q Quit`` and
``? Help`` always show.

A reactive repaints only when its value changes, and both bars have a fixed height, so an
update never asks for a layout pass (a reflow of the whole screen): only the bar is repainted.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

from hermes_procs.core.supervisor.text import safe_line  # one line, escapes shown, never sent

from .jobs_table import SHORT_ID, fmt_duration, short_id
from .sampler import JobRow
from .stack_view import is_header

__all__ = ["DetailTitle", "KeyFooter", "TopBar", "fit_title"]


class TopBar(Widget):
    """``hermes-procs  2/5 running  1 waiting for input  show:all  sort:newest  ~/home  ● box``:
    the last part is each remote host and its connection (● connected, ✕ unreachable)."""

    DEFAULT_CSS = """
    TopBar { height: 1; background: $primary 30%; color: $text; padding: 0 1; }
    """

    counts: reactive[tuple[int, int, int]] = reactive((0, 0, 0))  # running, total, waiting
    show_finished: reactive[bool] = reactive(True)
    sort_mode: reactive[str] = reactive("newest")
    search: reactive[str] = reactive("")
    home: reactive[str] = reactive("")
    host_filter: reactive[str] = reactive("")  # "" every host, "local" or a host label
    hosts: reactive[tuple[tuple[str, str, str], ...]] = reactive(())  # (label, short name, state)

    def render(self) -> Text:
        running, total, waiting = self.counts
        text = Text.assemble(("hermes-procs", "bold"), "  ", (f"{running}", "bold green"),
                             (f"/{total} running", ""), no_wrap=True, overflow="ellipsis")
        if waiting:
            text.append("  ")
            text.append(f" {waiting} waiting for input ", style="bold black on yellow")
        text.append("  show:", style="dim")
        text.append("all" if self.show_finished else "running", style="bold")
        text.append("  sort:", style="dim")
        text.append(self.sort_mode, style="bold")
        if self.search:
            text.append("  search:", style="dim")
            text.append(self.search, style="bold yellow")
        if self.host_filter:
            text.append("  host:", style="dim")
            text.append(dict((h[0], h[1]) for h in self.hosts).get(self.host_filter, self.host_filter),
                        style="bold")
        text.append(f"  {self.home}", style="dim")
        for _label, name, state in self.hosts:
            text.append("  ")
            mark, style = _HOST_STATES.get(state, ("…", "dim"))
            text.append(f"{mark} {name}", style=style)
            if state not in ("connected", "new"):
                text.append(f" {state}", style=style)
        return text


# how the top bar shows a remote host's connection: (mark, style)
_HOST_STATES = {"connected": ("●", "green"), "new": ("…", "dim"), "unreachable": ("✕", "bold magenta"),
                "down": ("✕", "bold red"), "invalid": ("✕", "bold red")}


class DetailTitle(Widget):
    """The header of the detail area: what the log or terminal below belongs to."""

    DEFAULT_CSS = """
    DetailTitle { height: 1; background: $panel; padding: 0 1; }
    """

    row: reactive[JobRow | None] = reactive(None)
    log_status: reactive[str] = reactive("following")
    terminal_open: reactive[bool] = reactive(False)
    host_name: reactive[str] = reactive("")  # the selected job's host, as the table names it
    rerun_as: reactive[str] = reactive("")  # the newest job started as a rerun of this one

    def render(self) -> Text:
        row = self.row
        if row is None:
            return Text("no job selected · n starts one", style="dim")
        return fit_title(self._who(row, row.session_id), safe_line(row.command), self._state(row),
                         self.content_size.width, self._who(row, short_id(row.session_id)))

    def _who(self, row: JobRow, sid: str) -> Text:
        """The job's id, name and rerun links."""
        text = Text(sid, style="cyan")
        if row.name:
            text.append(f"  {safe_line(row.name)}", style="bold")
        if row.rerun_of:
            text.append(f"  rerun of {short_id(row.rerun_of)}", style="italic")
        if self.rerun_as:
            text.append(f"  rerun as {short_id(self.rerun_as)}", style="italic")
        return text

    def _state(self, row: JobRow) -> Text:
        """Status, PTY, waiting for input, host and the log pane's state: kept whole, whatever
        the width (the command gives way)."""
        text = Text("  · ", style="dim")
        text.append(row.label, style="bold green" if row.running else "bold")
        if row.running:
            text.append(f" {fmt_duration(row.uptime)}", style="dim")
        if row.pty:
            text.append("  PTY", style="bold blue")
        if row.waiting:
            text.append("  waiting for input", style="bold black on yellow")
        if row.host:
            text.append("  on ", style="dim")
            text.append(self.host_name or row.host, style="bold magenta" if row.unreachable else "bold")
            if row.unreachable:
                text.append(" (unreachable: last known state)", style="magenta")
        if not self.terminal_open and not is_header(row.session_id):  # a stack's row has no log
            text.append(f"  · log {self.log_status}", style="dim")
        return text


def fit_title(who: Text, command: str, state: Text, width: int, short: Text) -> Text:
    """``who  command  state`` in `width` cells: the state stays whole; the command is cut
    first (dropped below 8 cells), then the id is shortened (`short`), then the name cut. A
    state longer than the width (a log filter's progress) keeps the short id before it and is
    cut at its end."""
    room = width - state.cell_len
    if who.cell_len + 2 + 8 > room and short.cell_len < who.cell_len:
        who = short
    text = who.copy()
    left = room - who.cell_len - 2
    if left >= 8:
        cut = Text(command)
        cut.truncate(left, overflow="ellipsis")
        text.append("  ")
        text.append_text(cut)
    elif who.cell_len > room:
        text.truncate(max(room, SHORT_ID), overflow="ellipsis" if room > SHORT_ID else "crop")
    text.append_text(state)
    text.no_wrap = True
    text.overflow = "ellipsis"
    return text


class KeyFooter(Footer):
    """The footer's keys, fitted to the width: the app's own keys (``q Quit``, ``? Help``,
    last) always show; when the keys do not fit, the screen's are dropped from their end."""

    def compose(self) -> ComposeResult:
        keys = [w for w in super().compose() if isinstance(w, FooterKey)]
        own = {b.action for b in type(self.app).BINDINGS if isinstance(b, Binding)}
        width = self.size.width or self.app.size.width
        while sum(_key_cells(k) for k in keys) > width:
            drop = [k for k in keys if k.action not in own]
            if not drop:
                break
            keys.remove(drop[-1])
        yield from keys

    def on_resize(self) -> None:
        self.call_after_refresh(self.recompose)


def _key_cells(key: FooterKey) -> int:
    """The cells a footer key takes: `` k Kill `` (Footer's padding: one before and after the
    key, one after the description)."""
    return len(key.key_display) + len(key.description) + 3
