"""The hermes-procs dashboard: watch, read, type into and kill every job of a state home.

The app embeds :class:`hermes_procs.core.ProcessRegistry` (no server).  Data flows one way:

* the :class:`~.sampler.Sampler` thread lists jobs and samples their trees once a second and
  posts a snapshot; the app applies it to the jobs table (in place) and raises toasts;
* the log pane's reader thread reads only the visible lines of the selected job's log;
* actions (spawn, kill, signal, input) run in thread workers and report back with messages.

Closing the dashboard never stops a job: every job belongs to its own supervisor.
"""

from __future__ import annotations

import gc
import os
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Footer, Input, Static

from hermes_procs.core import ProcessRegistry

from .dialogs import HelpScreen, KillScreen, NewJobScreen, SignalScreen
from .input_bar import InputBar
from .jobs_table import SORTS, JobsTable, fmt_duration
from .log_pane import LogPane
from .sampler import JobRow, Sampler, SnapshotData

from .terminal import TerminalPane
from .fullattach import full_attach

__all__ = ["HermesApp", "run"]

_GC_SETTLED = False


def _one_line(s: str) -> str:
    return " ".join(s.split())


def update_if_changed(widget: Static, text: Text) -> None:
    """Static.update() re-lays out and repaints even for the same text: skip that when idle.

    Only for the one-line bars (``height: 1`` in the CSS): their size never depends on the
    text, so no layout pass (a reflow of the whole screen) is asked for, only a repaint."""
    key = (text.plain, tuple(text.spans), str(text.style))
    if getattr(widget, "_last_key", None) != key:
        widget._last_key = key  # type: ignore[attr-defined]
        widget.update(text, layout=False)


class HermesApp(App):
    """Jobs table on top, the selected job's output (log or terminal) and input below."""

    TITLE = "hermes-procs"
    CSS = """
    Screen { layout: vertical; }
    #topbar {
        height: 1;
        background: $primary 30%;
        color: $text;
        padding: 0 1;
    }
    #job-search, #log-find { display: none; }
    #job-search.shown, #log-find.shown { display: block; }
    JobsTable { height: 40%; min-height: 4; }
    #detail-title {
        height: 1;
        background: $panel;
        padding: 0 1;
    }
    #detail { height: 1fr; }
    #detail LogPane { height: 1fr; }
    #detail TerminalPane { height: 1fr; }
    #term-hint { height: 1; background: $warning 20%; padding: 0 1; display: none; }
    #term-hint.shown { display: block; }
    InputBar { display: none; }
    InputBar.shown { display: block; }
    """

    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("n", "new_job", "New"),
        Binding("k", "kill", "Kill"),
        Binding("s", "signal", "Signal"),
        Binding("t", "terminal", "Term"),
        Binding("i", "focus_input", "Input", show=False),
        Binding("slash", "search_jobs", "Search", key_display="/"),
        Binding("f", "toggle_finished", "Filter"),
        Binding("o", "cycle_sort", "Sort"),
        Binding("c", "copy_command", "Copy cmd", show=False),
        Binding("C", "copy_id", "Copy id", show=False),
        Binding("l", "focus_log", "Log", show=False),
        Binding("a,ctrl+t", "full_attach", "Attach", show=False),
        Binding("ctrl+f", "find_in_log", "Find in log", show=False),
        Binding("f3", "find_next", "Next match", show=False),
        Binding("shift+f3", "find_previous", "Previous match", show=False),
        Binding("escape", "escape", "Back", show=False),
    ]

    class ActionDone(Message):
        """A worker finished an action on a job (spawn, signal, input)."""

        def __init__(self, what: str, result: Any, session_id: str | None = None) -> None:
            super().__init__()
            self.what = what
            self.result = result
            self.session_id = session_id

    def __init__(self, registry: ProcessRegistry | None = None, *, home: str | None = None,
                 sample_interval: float = 1.0) -> None:
        super().__init__()
        self.registry = registry if registry is not None else ProcessRegistry(home=home)
        self.sample_interval = sample_interval
        self.sampler: Sampler | None = None
        self.snapshot: SnapshotData | None = None
        self.selected: str | None = None
        self.terminal: Any = None
        self._statuses: dict[str, str] = {}
        self._pending_select: str | None = None
        self._log_status = "following"
        self.home_label: str | None = None  # shown instead of the home's path (screenshots)
        self._table: JobsTable | None = None
        self._log_pane: LogPane | None = None
        self._input_bar: InputBar | None = None

    # --- layout -----------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Static(id="topbar")
        yield Input(placeholder="search jobs by command, name or id · Enter keeps · Esc clears", id="job-search", compact=True)
        yield JobsTable(id="jobs")
        yield Static(id="detail-title")
        with Vertical(id="detail"):
            yield Static(id="term-hint")
            yield LogPane(id="log")
            yield Input(placeholder="find in log · Enter / ↓ next · ↑ previous · Esc closes", id="log-find", compact=True)
            yield InputBar(id="input")
        yield Footer(show_command_palette=False)

    def _q(self, selector, expect=None):
        """Query the main screen (``App.query_one`` looks at the top screen: a dialog)."""
        screen = self.screen_stack[0] if self.screen_stack else self.screen
        return screen.query_one(selector, expect) if expect is not None else screen.query_one(selector)

    @property
    def table(self) -> JobsTable:
        if self._table is None:
            self._table = self._q(JobsTable)
        return self._table

    @property
    def log_pane(self) -> LogPane:
        if self._log_pane is None:
            self._log_pane = self._q(LogPane)
        return self._log_pane

    @property
    def input_bar(self) -> InputBar:
        if self._input_bar is None:
            self._input_bar = self._q(InputBar)
        return self._input_bar

    def on_mount(self) -> None:
        self._update_topbar()
        self._update_detail_title()
        self.table.focus()
        self.sampler = Sampler(self.registry, self, interval=self.sample_interval)
        self.sampler.start()
        self.call_after_refresh(self._settle_gc)

    def _settle_gc(self) -> None:
        """Move everything that exists once the first screen is up (modules, classes, the
        widget tree: ~80,000 objects) out of the cyclic GC's reach.  Every full collection
        walked all of them: ~50 ms every few seconds, 120-220 ms on a loaded machine, and a key
        pressed then waited for it.  They are still freed by reference counting."""
        global _GC_SETTLED
        if not _GC_SETTLED:  # once per process (tests run many apps in one)
            _GC_SETTLED = True
            gc.collect()
            gc.freeze()

    def on_unmount(self) -> None:
        if self.sampler is not None:
            self.sampler.stop()
        try:
            self.log_pane.stop_reader()
        except Exception:
            pass

    # --- snapshots ----------------------------------------------------------------------

    @on(Sampler.Snapshot)
    def _on_snapshot(self, message: Sampler.Snapshot) -> None:
        if self._exit or not self.screen_stack or not self.table.is_attached:
            return  # a late snapshot while the app closes
        data = message.data
        first = self.snapshot is None
        self.snapshot = data
        self.table.apply(data.jobs, data.taken_at)
        # toasts: a job that was running has exited
        for row in data.jobs:
            before = self._statuses.get(row.session_id)
            # a job seen running has ended, or a new job came and went between two samples
            if not first and before in ("running", None) and not row.running:
                self._toast_exit(row)
            self._statuses[row.session_id] = row.status
        for event in data.events:
            if event.get("type") == "watch_match":
                row = self.table.rows_by_id.get(event.get("session_id", ""))
                title = row.title if row else event.get("session_id", "")
                out = _one_line(str(event.get("output", "")))[-120:]
                self.notify(f"{out}", title=f"{_one_line(title)[:40]}: /{event.get('pattern')}/ matched",
                            severity="warning", markup=False, timeout=8)
        if data.error:
            self.notify(data.error, severity="error", markup=False)
        if self._pending_select and self._pending_select in self.table.rows_by_id:
            self.table.select_id(self._pending_select)
            self._pending_select = None
        if data.selected == self.selected and self.selected:
            self.input_bar.set_history(data.inputs)
        self._update_topbar()
        self._update_detail_title()

    def _toast_exit(self, row: JobRow) -> None:
        title = _one_line(row.title)[:50]
        if row.label == "exited 0":
            self.notify(f"{title}", title="Job finished: exit 0", timeout=5, markup=False)
        else:
            self.notify(f"{title}", title=f"Job {row.label}", severity="error", timeout=8, markup=False)

    def _update_topbar(self) -> None:
        rows = list(self.table.rows_by_id.values())
        running = sum(1 for r in rows if r.running)
        waiting = sum(1 for r in rows if r.waiting)
        text = Text.assemble(("hermes-procs", "bold"), "  ", (f"{running}", "bold green"),
                             (f"/{len(rows)} running", ""), no_wrap=True, overflow="ellipsis")
        if waiting:
            text.append("  ")
            text.append(f" {waiting} waiting for input ", style="bold black on yellow")
        text.append("  show:", style="dim")
        text.append("all" if self.table.show_finished else "running", style="bold")
        text.append("  sort:", style="dim")
        text.append(self.table.sort_mode, style="bold")
        if self.table.search:
            text.append("  search:", style="dim")
            text.append(self.table.search, style="bold yellow")
        text.append(f"  {self.home_label or _short_home(self.registry.home)}", style="dim")
        update_if_changed(self._q("#topbar", Static), text)

    def _update_detail_title(self) -> None:
        row = self.current_row()
        widget = self._q("#detail-title", Static)
        if row is None:
            update_if_changed(widget, Text("no job selected · n starts one", style="dim"))
            self._show_input(False)
            return
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(row.session_id, style="cyan")
        if row.name:
            text.append(f"  {row.name}", style="bold")
        text.append(f"  {_one_line(row.command)[:80]}")
        text.append("  · ", style="dim")
        text.append(row.label, style="bold green" if row.running else "bold")
        if row.running:
            text.append(f" {fmt_duration(row.uptime)}", style="dim")
        if row.pty:
            text.append("  PTY", style="bold blue")
        if row.waiting:
            text.append("  waiting for input", style="bold black on yellow")
        if self.terminal is None:
            text.append(f"  · log {self._log_status}", style="dim")
        update_if_changed(widget, text)
        self._show_input(row.running and self.terminal is None)

    def _show_input(self, show: bool) -> None:
        self.input_bar.set_class(show, "shown")

    def current_row(self) -> JobRow | None:
        return self.table.rows_by_id.get(self.selected) if self.selected else None

    # --- selection ----------------------------------------------------------------------

    @on(JobsTable.Selected)
    def _on_selected(self, message: JobsTable.Selected) -> None:
        sid = message.session_id
        if sid == self.selected:
            return
        self.selected = sid
        self._close_terminal(refocus=False)
        jobdir = None
        if sid:
            try:
                jobdir = Path(self.registry.job_dir(sid))
            except Exception:
                jobdir = None
        self.log_pane.show_job(sid, jobdir)
        self.input_bar.set_job(sid)
        if self.sampler is not None:
            self.sampler.selected = sid
            self.sampler.poke()
        self._update_detail_title()

    @on(DataTable.RowSelected)
    def _on_row_enter(self, message: DataTable.RowSelected) -> None:
        row = self.current_row()
        if row is None:
            return
        if row.pty and row.running and TerminalPane is not None:
            self.action_terminal()
        elif row.running:
            self.action_focus_input()
        else:
            self.log_pane.focus()

    @on(LogPane.Status)
    def _on_log_status(self, message: LogPane.Status) -> None:
        self._log_status = message.text
        self._update_detail_title()

    # --- terminal pane ------------------------------------------------------------------

    def action_terminal(self) -> None:
        row = self.current_row()
        if row is None:
            return
        if not row.pty:
            self.notify("This job has no PTY: its output is in the log pane, type with i.", timeout=4)
            return
        if not row.running:
            self.notify("The job has exited; its output stays in the log pane.", timeout=4)
            return
        if self.terminal is not None and self.terminal.session_id == row.session_id:
            self.terminal.focus()
            return
        self._close_terminal(refocus=False)
        pane = TerminalPane(self.registry, row.session_id, id="terminal")
        self.terminal = pane
        self.log_pane.display = False
        self._q("#log-find", Input).remove_class("shown")
        hint = self._q("#term-hint", Static)
        hint.update(Text.assemble(("Terminal: ", "bold"), "keys go to the job · ",
                                  ("Ctrl-]", "bold"), " back to the table · ",
                                  ("Ctrl-T", "bold"), " full screen"))
        hint.add_class("shown")
        self._q("#detail", Vertical).mount(pane, before=self.log_pane)
        pane.focus()
        self._update_detail_title()

    def _close_terminal(self, refocus: bool = True) -> None:
        pane, self.terminal = self.terminal, None
        if pane is not None:
            pane.remove()
        self._q("#term-hint", Static).remove_class("shown")
        self.log_pane.display = True
        if refocus:
            self.table.focus()
        self._update_detail_title()

    @on(TerminalPane.Leave)
    def _on_terminal_leave(self, message) -> None:
        self._close_terminal(refocus=True)

    @on(TerminalPane.FullAttach)
    def _on_terminal_full(self, message) -> None:
        self._full_attach(message.session_id)

    @on(TerminalPane.Ended)
    def _on_terminal_ended(self, message) -> None:
        if self.sampler is not None:
            self.sampler.poke()

    def action_full_attach(self) -> None:
        row = self.current_row()
        if row is None:
            return
        if not row.running:
            self.notify("The job has exited: nothing to attach to.", timeout=4)
            return
        self._full_attach(row.session_id)

    def _full_attach(self, session_id: str) -> None:
        full_attach(self, self.registry, session_id)
        if self.sampler is not None:
            self.sampler.poke()

    # --- actions on jobs ----------------------------------------------------------------

    def _need_row(self) -> JobRow | None:
        row = self.current_row()
        if row is None:
            self.notify("Select a job first.", timeout=3)
        return row

    def action_kill(self) -> None:
        row = self._need_row()
        if row is None:
            return

        def done(result: dict | None) -> None:
            if result is None:
                return
            status = result.get("status")
            if status == "killed":
                self.notify(f"{_one_line(row.title)[:50]}", title="Killed", timeout=4, markup=False)
            elif status == "already_exited":
                self.notify(f"{_one_line(row.title)[:50]} had already exited", timeout=4, markup=False)
            elif status == "error":
                self.notify(result.get("error", "kill failed"), title="Kill failed", severity="error", markup=False)
            self._statuses[row.session_id] = "killed-by-us"  # no second "exited" toast
            if self.sampler is not None:
                self.sampler.poke()

        self.push_screen(KillScreen(self.registry, row), done)

    def action_signal(self) -> None:
        row = self._need_row()
        if row is None:
            return
        if not row.running:
            self.notify("The job has exited.", timeout=3)
            return

        def chosen(sig: str | None) -> None:
            if sig:
                self._send_signal(row.session_id, sig)

        self.push_screen(SignalScreen(row), chosen)

    @work(thread=True, group="actions")
    def _send_signal(self, session_id: str, sig: str) -> None:
        result = self.registry.signal(session_id, sig)
        self.post_message(self.ActionDone(f"signal {sig}", result, session_id))

    def action_new_job(self) -> None:
        cwd = None
        row = self.current_row()
        if row is not None and row.cwd and os.path.isdir(row.cwd):
            cwd = row.cwd

        def chosen(spec: dict | None) -> None:
            if spec:
                self._spawn(spec)

        self.push_screen(NewJobScreen(cwd), chosen)

    @work(thread=True, group="actions")
    def _spawn(self, spec: dict) -> None:
        result = self.registry.spawn(spec["command"], cwd=spec.get("cwd"), pty=bool(spec.get("pty")),
                                     name=spec.get("name"))
        self.post_message(self.ActionDone("start", result, result.get("session_id")))

    @on(InputBar.Send)
    def _on_input(self, message: InputBar.Send) -> None:
        self._write(message.session_id, message.data, message.mode)

    @work(thread=True, group="actions")
    def _write(self, session_id: str, data: str, mode: str) -> None:
        if mode == "submit":
            result = self.registry.submit(session_id, data, source="human")
        elif mode == "write":
            result = self.registry.write(session_id, data, source="human")
        else:
            result = self.registry.close_stdin(session_id)
        self.post_message(self.ActionDone(mode, result, session_id))

    @on(ActionDone)
    def _on_action_done(self, message: ActionDone) -> None:
        result = message.result if isinstance(message.result, dict) else {}
        status = result.get("status")
        if message.what == "start":
            if status == "running":
                self._pending_select = result.get("session_id")
                self.notify(_one_line(str(result.get("command", "")))[:60], title="Started", timeout=3, markup=False)
            else:
                self.notify(result.get("error", "could not start"), title="Start failed", severity="error", markup=False)
        elif message.what.startswith("signal"):
            if status == "ok":
                self.notify(f"sent {message.what.split()[1]}", timeout=3)
            else:
                self.notify(result.get("error", status or "failed"), title="Signal", severity="error", markup=False)
        else:  # input
            if status == "ok":
                if message.what == "eof":
                    self.notify("EOF sent (stdin closed)", timeout=3)
            elif status == "already_exited":
                self.notify("The job has already exited.", severity="warning", timeout=4)
            else:
                self.notify(result.get("error", status or "failed"), title="Input", severity="error", markup=False)
        if self.sampler is not None:
            self.sampler.poke()

    def action_copy_command(self) -> None:
        row = self._need_row()
        if row is not None:
            self.copy_to_clipboard(row.command)
            self.notify(_one_line(row.command)[:60], title="Copied the command", timeout=3, markup=False)

    def action_copy_id(self) -> None:
        row = self._need_row()
        if row is not None:
            self.copy_to_clipboard(row.session_id)
            self.notify(row.session_id, title="Copied the id", timeout=3, markup=False)

    # --- view actions -------------------------------------------------------------------

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_toggle_finished(self) -> None:
        self.table.show_finished = not self.table.show_finished
        self.table.refilter()
        self._update_topbar()
        self.notify("showing all jobs" if self.table.show_finished else "showing running jobs only", timeout=2)

    def action_cycle_sort(self) -> None:
        mode = SORTS[(SORTS.index(self.table.sort_mode) + 1) % len(SORTS)]
        self.table.set_sort(mode)
        self._update_topbar()

    def action_search_jobs(self) -> None:
        box = self._q("#job-search", Input)
        box.add_class("shown")
        box.focus()

    @on(Input.Changed, "#job-search")
    def _search_changed(self, event: Input.Changed) -> None:
        self.table.search = event.value.strip()
        self.table.refilter()
        self._update_topbar()

    @on(Input.Submitted, "#job-search")
    def _search_done(self, event: Input.Submitted) -> None:
        if not event.value.strip():
            event.control.remove_class("shown")
        self.table.focus()

    def action_focus_log(self) -> None:
        if self.terminal is not None:
            self.terminal.focus()
        else:
            self.log_pane.focus()

    def action_focus_input(self) -> None:
        row = self.current_row()
        if row is None or not row.running:
            self.notify("Select a running job to type into it.", timeout=3)
            return
        if self.terminal is not None:
            self.terminal.focus()
            return
        self._show_input(True)
        self.input_bar.line.focus()

    def action_find_in_log(self) -> None:
        if self.terminal is not None:
            self._close_terminal(refocus=False)
        box = self._q("#log-find", Input)
        box.add_class("shown")
        box.focus()

    @on(Input.Submitted, "#log-find")
    def _find_submit(self, event: Input.Submitted) -> None:
        self.log_pane.search(event.value, forward=True)

    def on_key(self, event) -> None:
        box = self._q("#log-find", Input)
        if self.focused is box and event.key in ("up", "down") and box.value:
            event.stop()
            event.prevent_default()
            self.log_pane.search(box.value, forward=event.key == "down")

    def action_find_next(self) -> None:
        self.log_pane.search(self._q("#log-find", Input).value or self.log_pane.query, True)

    def action_find_previous(self) -> None:
        self.log_pane.search(self._q("#log-find", Input).value or self.log_pane.query, False)

    def action_escape(self) -> None:
        search = self._q("#job-search", Input)
        find = self._q("#log-find", Input)
        if self.focused is search:
            search.value = ""
            search.remove_class("shown")
            self.table.focus()
        elif self.focused is find:
            find.remove_class("shown")
            self.log_pane.match_line = None
            self.log_pane.refresh()
            self.log_pane.focus()
        elif self.table.search:
            search.value = ""
            search.remove_class("shown")
        else:
            self.table.focus()


def _short_home(home: Path) -> str:
    s = str(home)
    user = os.path.expanduser("~")
    return "~" + s[len(user):] if user != "/" and s.startswith(user) else s


def run(home: str | None = None, demo: bool = False) -> int:
    """Open the dashboard on ``home`` (None: the default state home); with ``demo`` start the
    sample jobs first.  Returns 0.  Jobs keep running after the dashboard closes."""
    registry = ProcessRegistry(home=home)
    if demo:
        from .demo import start_demo

        for result in start_demo(registry):
            if result.get("status") != "running":
                print(f"hermes-procs: a sample job failed to start: {result.get('error')}")
    HermesApp(registry).run()
    return 0


if __name__ == "__main__":  # pragma: no cover
    import sys

    run(sys.argv[1] if len(sys.argv) > 1 else None, demo="--demo" in sys.argv)
