"""The dashboard's main screen: the layout, the state it shows and every action on jobs.

State lives in reactives: the table's filter, sort and search (bound to the
:class:`~.jobs_table.JobsTable` and the :class:`~.bars.TopBar` with ``data_bind``), the selected
job's row (shown by the :class:`~.bars.DetailTitle`).  Data flows one way:

* the :class:`~.sampler.Sampler` thread posts a snapshot about once a second; the screen hands
  the rows to the table (updated in place) and raises toasts, plus the bell / desktop
  notification (:mod:`.notify`) once per episode when a job starts waiting for input or fails;
* the log pane's reader thread reads only the visible lines of the selected job's log;
* actions (spawn, signal, input) run in thread workers and report back with one typed message
  per outcome (:mod:`.messages`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import DataTable, Static

from hermes_procs.core.registry.interface import Registry
from hermes_procs.core.supervisor.text import safe_line

from .bars import DetailTitle, KeyFooter, TopBar
from .clipboard import system_copy
from .dialogs import KillScreen, NewJobScreen, RerunScreen, SaveLogScreen, SignalScreen
from .exit_toasts import ExitToasts, summary
from .files import Files
from .find import FilterBar, FindBox, JobSearch
from .fullattach import full_attach
from .input_bar import InputBar
from .jobs_table import SORTS, JobsTable
from .keyroute import focus_now
from .log_export import file_name, save_log, selected_text
from .log_pane import LogPane
from .messages import (
    ActionFailed,
    Copied,
    InputSent,
    JobAlreadyExited,
    JobRerun,
    JobStarted,
    LogSaved,
    PinChanged,
    SendMode,
    SignalSent,
    WaitingForInput,
)
from .notify import alert
from .proc_tree import TreeScreen
from .readonly import refused
from .sampler import JobRow, Sampler, SnapshotData
from .sparklines import TrendBar
from .stack_actions import StackActions
from .stack_view import is_header
from .terminal import TerminalPane

if TYPE_CHECKING:
    from .config import Config


class _Dashboard(Protocol):
    """What the screen takes of its app (app.HermesApp, which shows it)."""

    config: Config
    files: Files

__all__ = ["MainScreen"]


# size: the screen owns every action on jobs (its bindings name them, the help lists them);
# each is a few lines that hand the work to a dialog, a worker or the registry.
class MainScreen(StackActions):
    """Jobs table on top, the selected job's output (log or terminal) and input below; the
    stack keys and rows come from StackActions (a Screen)."""

    HELP_TITLE = "Jobs"
    DEFAULT_CSS = """
    MainScreen { layout: vertical; }
    #jobs { height: 40%; min-height: 4; }
    #detail { height: 1fr; }
    #detail LogPane { height: 1fr; }
    #detail TerminalPane { height: 1fr; }
    #term-hint { height: 1; background: $warning 20%; padding: 0 1; display: none; }
    #term-hint.shown { display: block; }
    #stack-detail { height: 1fr; display: none; padding: 0 1; }
    #stack-detail.shown { display: block; }
    InputBar { display: none; }
    InputBar.shown { display: block; }
    """

    BINDINGS = [
        Binding("n", "new_job", "New", tooltip="new job: command, working directory, PTY toggle, name", id="new_job"),
        Binding("k", "kill", "Kill", tooltip="kill the selected job's whole tree (asks first)", id="kill"),
        Binding("r", "rerun", "Rerun", show=False,
                tooltip="run the selected job again (same command, cwd, env, PTY) as a new job; "
                        "a running one is killed first (asks)", id="rerun"),
        Binding("s", "signal", "Signal", tooltip="send a signal: INT, TERM, HUP or KILL", id="signal"),
        Binding("K", "toggle_pin", "Keep", show=False,
                tooltip="keep a leased job (an agent's ephemeral job, run --lease; L in the table) when its owner "
                        "ends, or let it end with its owner again (K: kept)", id="toggle_pin"),
        Binding("p", "process_tree", "Tree", tooltip="the selected job's processes, live: CPU, RSS, who waits "
                "for input; signal or kill one of them", id="process_tree"),
        Binding("t", "terminal", "Term", tooltip="terminal pane of a PTY job (keys go to the job)", id="terminal"),
        Binding("i", "focus_input", "Input", show=False,
                tooltip="type into the selected job: Enter sends a line, Ctrl-R raw, Ctrl-D EOF", id="focus_input"),
        Binding("slash", "search_jobs", "Search", key_display="/",
                tooltip="search jobs by command, name or id", id="search_jobs"),
        Binding("f", "toggle_finished", "Finished", tooltip="show running jobs only / all jobs", id="toggle_finished"),
        Binding("H", "cycle_host", "Host", show=False,
                tooltip="show one host's jobs: every host, this machine, each remote host", id="cycle_host"),
        Binding("o", "cycle_sort", "Sort",
                tooltip="cycle the sort: newest, oldest, cpu, memory, quiet, status (waiting, running, failed, "
                        "killed, exited 0), name", id="cycle_sort"),
        Binding("c", "copy_command", "Copy cmd", show=False, tooltip="copy the selected job's command",
                id="copy_command"),
        Binding("C", "copy_id", "Copy id", show=False, tooltip="copy the selected job's id", id="copy_id"),
        Binding("l", "focus_log", "Log", show=False, tooltip="focus the log pane (or the terminal pane)",
                id="focus_log"),
        Binding("a,ctrl+t", "full_attach", "Attach", show=False,
                tooltip="full-screen attach of a running job (detach with Ctrl-])", id="full_attach"),
        Binding("ctrl+f", "find_in_log", "Find in log", show=False, tooltip="find text in the log", id="find_in_log"),
        Binding("ampersand", "filter_log", "Filter log", key_display="&",
                tooltip="filter the log: only lines matching a regex, with N lines of context; a running job's "
                        "new lines too", id="filter_log"),
        Binding("f3", "find_next", "Next match", show=False, tooltip="next match of the last find", id="find_next"),
        Binding("shift+f3", "find_previous", "Previous match", show=False,
                tooltip="previous match of the last find", id="find_previous"),
        Binding("escape", "escape", "Back", show=False, tooltip="clear the job search, back to the table", id="escape"),
    ]

    # The screen draws nothing of its own: a change repaints only the widgets that show it (the
    # default, repaint=True, redrew the whole screen, log pane included: 30-120 ms a sort key
    # during a flood).
    sort_mode: reactive[str] = reactive("newest", repaint=False)
    show_finished: reactive[bool] = reactive(True, repaint=False)
    search: reactive[str] = reactive("", repaint=False)
    host_filter: reactive[str] = reactive("", repaint=False)  # "": every host, "local", or a remote host's label
    selected: reactive[str | None] = reactive(None, init=False, repaint=False)

    def __init__(self, registry: Registry, *, sample_interval: float = 1.0, home_label: str | None = None) -> None:
        super().__init__()
        self.registry = registry
        self.sample_interval = sample_interval
        self.home_label = home_label
        self.sampler: Sampler | None = None
        self.snapshot: SnapshotData | None = None
        self.terminal: TerminalPane | None = None
        self._statuses: dict[str, str] = {}
        self._ended_by_us: set[str] = set()  # jobs killed from here (k, r): no exit alert for them
        self._exit_toasts = ExitToasts()  # the first few exits one by one, then one summary (exit_toasts.py)
        self._waiting: set[str] = set()  # jobs inside a waiting-for-input episode (alerted once)
        self._host_states: dict[str, str] = {}
        self._pending_select: str | None = None

    # --- layout -----------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        bound = (MainScreen.sort_mode, MainScreen.show_finished, MainScreen.search, MainScreen.host_filter)
        yield TopBar(id="topbar").data_bind(*bound)
        yield JobSearch(id="job-search")
        yield JobsTable(id="jobs").data_bind(*bound)
        yield DetailTitle(id="detail-title")
        yield TrendBar(id="trends")
        with Vertical(id="detail"):
            yield Static(id="term-hint")
            yield LogPane(id="log")
            yield Static(id="stack-detail")
            yield FindBox(id="log-find")
            yield FilterBar(id="log-filter")
            yield InputBar(id="input")
        yield KeyFooter(show_command_palette=False)

    @property
    def table(self) -> JobsTable:
        return self.query_one(JobsTable)

    @property
    def log_pane(self) -> LogPane:
        return self.query_one(LogPane)

    @property
    def input_bar(self) -> InputBar:
        return self.query_one(InputBar)

    @property
    def config(self) -> Config:
        """The dashboard's configuration (tui/config.py): keys, highlights, notify, theme."""
        return cast("_Dashboard", self.app).config

    @property
    def files(self) -> Files:
        """Where the dashboard writes files on this machine (tui/files.py; refuses when read-only)."""
        return cast("_Dashboard", self.app).files

    def on_mount(self) -> None:
        self.query_one(TopBar).home = self.home_label or _short_home(self.registry.home)
        self.log_pane.highlights = self.config.highlights
        focus_now(self.table)  # keys typed while the dashboard starts wait for it (tui/keyroute.py)
        self.sampler = Sampler(self.registry, self, interval=self.sample_interval)
        self.sampler.start()

    def on_unmount(self) -> None:
        if self.sampler is not None:
            self.sampler.stop()  # the log pane stops its own reader

    def _poke(self) -> None:
        if self.sampler is not None:
            self.sampler.poke()

    # --- snapshots ----------------------------------------------------------------------

    @on(Sampler.Snapshot)
    def _on_snapshot(self, message: Sampler.Snapshot) -> None:
        if not self.is_attached or not self.table.is_attached:
            return  # a late snapshot while the app closes
        data = message.data
        first = self.snapshot is None
        self.snapshot = data
        if data.hosts:
            self._show_hosts(data.hosts)
        self.table.apply(self.arrange_stacks(data), data.taken_at)
        if self.sampler is not None:
            self.sampler.on_screen = self.table.rows_on_screen()
        self._announce(data, first)
        if self._pending_select and self._pending_select in self.table.rows_by_id:
            self.table.select_id(self._pending_select)
            self._pending_select = None
        if data.selected == self.selected and self.selected:
            self.input_bar.set_history(data.inputs)
        rows = [r for r in self.table.rows_by_id.values() if not is_header(r.session_id)]
        self.query_one(TopBar).counts = (sum(r.running for r in rows), len(rows), sum(r.waiting for r in rows))
        self.query_one(TrendBar).trend = data.trend if data.selected == self.selected else None
        self.show_stack(self.selected)
        self._show_row()

    def _announce(self, data: SnapshotData, first: bool) -> None:
        """The toasts (and terminal alerts) a snapshot calls for: jobs that ended, jobs that
        started waiting for input, watch pattern matches, a sampling error."""
        for row in data.jobs:
            before = self._statuses.get(row.session_id)
            # a job seen running has ended, or a new job came and went between two samples
            if (not first and before in ("running", None) and not row.running
                    and row.session_id not in self._ended_by_us):
                self._ended(row)
            self._statuses[row.session_id] = row.status
            self._track_waiting(row, first)
        for event in data.events:
            if event.get("type") == "watch_match":
                self._toast_watch(event)
        if data.error:
            self.notify(data.error, severity="error", markup=False)

    @on(JobsTable.Scrolled)
    def _on_table_scrolled(self) -> None:
        """Rows came on screen whose figures the sampler may not have read lately: read them now."""
        if self.sampler is not None:
            shown = self.table.rows_on_screen()
            if not shown <= self.sampler.on_screen:
                self.sampler.on_screen = shown
                self.sampler.poke()

    def _show_hosts(self, hosts: list[dict]) -> None:
        """The HOST column, the host names and each remote host's state in the top bar."""
        names = {h["host"]: h.get("name") or h["host"] for h in hosts}
        self.table.set_host_names(names)
        bar = self.query_one(TopBar)
        bar.hosts = tuple((h["host"], names[h["host"]], h.get("state", "")) for h in hosts)
        for h in hosts:  # say once when a host drops or comes back
            before = self._host_states.get(h["host"])
            state = h.get("state", "")
            if before is not None and before != state and state in ("connected", "unreachable", "down"):
                self.notify(h.get("error") or "" if state != "connected" else "its jobs are live again",
                            title=f"{names[h['host']]}: {state}", timeout=6, markup=False,
                            severity="warning" if state != "connected" else "information")
            self._host_states[h["host"]] = state

    def _ended(self, row: JobRow) -> None:
        """Toast a job that ended, or hold it for the summary toast when many end at once."""
        if self._exit_toasts.ended(row):
            self._toast_exit(row)
        elif len(self._exit_toasts.held) == 1:
            self.set_timer(self._exit_toasts.wait(), self._toast_held)

    def _toast_held(self) -> None:
        rows = self._exit_toasts.flush()
        if not rows or not self.is_attached:
            return
        title, message, failed = summary(rows)
        self.notify(message, title=title, severity="error" if failed else "information",
                    timeout=8 if failed else 5, markup=False)
        if failed:
            self._alert("failure", f"{title}: {message}")

    def _toast_exit(self, row: JobRow) -> None:
        title = safe_line(row.title)[:50]
        if row.label == "exited 0":
            self.notify(title, title="Job finished: exit 0", timeout=5, markup=False)
        else:
            self.notify(title, title=f"Job {row.label}", severity="error", timeout=8, markup=False)
            self._alert("failure", f"{title}: {row.label}")

    def _alert(self, kind: str, body: str) -> None:
        """The bell / desktop notification the config's [notify] table asks for (tui/notify.py)."""
        alert(self.app, self.config.notify, kind, "hermes-procs", body)

    def _track_waiting(self, row: JobRow, first: bool) -> None:
        """One alert per waiting-for-input episode: the first sample that shows the job waiting
        starts it (not when the dashboard opens on it, nor while the human types into it), the
        first that shows it not waiting ends it."""
        sid = row.session_id
        if not row.waiting:
            self._waiting.discard(sid)
        elif sid not in self._waiting:
            self._waiting.add(sid)
            if not first and not self._typing_into(sid):
                self._ask_question(sid, row.title)

    def _typing_into(self, sid: str) -> bool:
        term = self.terminal
        return ((term is not None and term.session_id == sid and term.has_focus)
                or (self.selected == sid and self.input_bar.line.has_focus))

    @work(thread=True, group="alerts")
    def _ask_question(self, sid: str, title: str) -> None:
        """The last line the job printed (its question, usually), then the alert."""
        try:
            result = self.registry.poll(sid)
            output = str(result.get("output_preview") or "") if isinstance(result, dict) else ""
        except Exception:  # the alert goes out without the question
            output = ""
        lines = [line for line in output.splitlines() if line.strip()]
        self.post_message(WaitingForInput(sid, title, safe_line(lines[-1])[-160:] if lines else ""))

    @on(WaitingForInput)
    def _on_waiting(self, message: WaitingForInput) -> None:
        if message.session_id not in self._waiting:  # answered in the meantime
            return
        title = safe_line(message.title)[:50]
        self.notify(message.question or title, title=f"{title}: waiting for input" if message.question
                    else "Waiting for input", severity="warning", timeout=10, markup=False)
        self._alert("input", f"{title} is waiting for input" + (f": {message.question}" if message.question else ""))

    def _toast_watch(self, event: dict) -> None:
        row = self.table.rows_by_id.get(event.get("session_id", ""))
        title = row.title if row else event.get("session_id", "")
        out = safe_line(str(event.get("output", "")))[-120:]
        self.notify(out, title=f"{safe_line(title)[:40]}: /{event.get('pattern')}/ matched",
                    severity="warning", markup=False, timeout=8)

    def current_row(self) -> JobRow | None:
        return self.table.rows_by_id.get(self.selected) if self.selected else None

    def _catch_up(self) -> None:
        """Select the row the table's cursor is on now: the cursor moves at once, the selection
        two messages later, and a key typed right behind an arrow (``↓k``) must act on the row
        the arrow reached (tui/keyroute.py)."""
        sid = self.table.current_id()
        if sid is not None and sid != self.selected:
            self.selected = sid

    def _show_row(self) -> None:
        """The detail title and the input bar follow the selected job's row."""
        row = self.current_row()
        title = self.query_one(DetailTitle)
        title.host_name = self.table.host_name(row.host) if row is not None and row.host else ""
        reruns = [r for r in self.table.rows_by_id.values() if row is not None and r.rerun_of == row.session_id]
        title.rerun_as = max(reruns, key=lambda r: r.started).session_id if reruns else ""
        title.row = row
        title.terminal_open = self.terminal is not None
        self.log_pane.set_ended(row is not None and not row.running)
        shown = row is not None and row.running and self.terminal is None and not is_header(row.session_id)
        if not shown and self.input_bar.has_focus_within:  # the job typed into has ended
            focus_now(self.table)
        self.input_bar.set_class(shown, "shown")

    # --- selection ----------------------------------------------------------------------

    @on(JobsTable.Selected)
    def _on_selected(self, message: JobsTable.Selected) -> None:
        self.selected = message.session_id

    def watch_selected(self, sid: str | None) -> None:
        self._close_terminal(refocus=False)
        self.query_one(FilterBar).remove_class("shown")
        jobdir = None
        if self.show_stack(sid):
            sid = None  # a stack's row: its jobs' states instead of a log
        if sid:
            try:
                jobdir = Path(self.registry.job_dir(sid))
            except Exception:
                jobdir = None
        self.log_pane.show_job(sid, jobdir)
        self.query_one(TrendBar).trend = None  # the next sample starts the new job's history
        self.input_bar.set_job(sid)
        if self.sampler is not None:
            self.sampler.selected = sid
        self._poke()
        self._show_row()

    @on(DataTable.RowSelected)
    def _on_row_clicked(self) -> None:
        self.action_open_job()

    def action_open_job(self) -> None:
        """Enter on a job (or a click on the selected row): a PTY job's terminal pane, a pipe
        job's input bar, a finished job's log."""
        self._catch_up()
        row = self.current_row()
        if row is None:
            return
        if is_header(row.session_id):
            self.toggle_stack(row.session_id)
        elif row.pty and row.running:
            self.action_terminal()
        elif row.running:
            self.action_focus_input()
        else:
            focus_now(self.log_pane)

    @on(LogPane.CopyLines)
    def _on_copy_lines(self, message: LogPane.CopyLines) -> None:
        self._copy_lines(message.jobdir, message.first, message.last)

    @work(thread=True, group="copy", exclusive=True)
    def _copy_lines(self, jobdir: Path, first: int, last: int) -> None:
        try:
            text = selected_text(jobdir, first, last)
        except Exception as exc:  # the log went away under us
            self.post_message(ActionFailed("Copy", str(exc) or type(exc).__name__))
            return
        how = system_copy(text)
        if how is None:
            self.app.call_from_thread(self.app.copy_to_clipboard, text)  # OSC 52
            how = "OSC 52"
        n = last - first + 1
        self.post_message(Copied(f"{n} line{'s' * (n != 1)}", how))

    @on(Copied)
    def _on_copied(self, message: Copied) -> None:
        self.notify(f"{message.what} ({message.how})", title="Copied", timeout=3, markup=False)

    @on(LogPane.SaveRequested)
    def _on_save_requested(self, message: LogPane.SaveRequested) -> None:
        if refused(self, self.files):  # a read-only dashboard writes no file (the write refuses too)
            return
        row = self.table.rows_by_id.get(message.session_id)
        suggested = os.path.join(os.getcwd(), file_name(row.name if row else "", message.session_id))

        def chosen(choice: tuple[str, bool] | None) -> None:
            if choice:
                self._save_log(message.jobdir, Path(choice[0]), choice[1])

        self.app.push_screen(SaveLogScreen(suggested), chosen)

    @work(thread=True, group="save")
    def _save_log(self, jobdir: Path, dest: Path, plain: bool) -> None:
        try:
            n = save_log(jobdir, dest, plain, self.files)
        except OSError as exc:
            self.post_message(ActionFailed("Save", f"{dest}: {exc.strerror or exc}"))
            return
        self.post_message(LogSaved(str(dest), n, plain))

    @on(LogSaved)
    def _on_saved(self, message: LogSaved) -> None:
        kind = "plain text" if message.plain else "raw"
        self.notify(f"{message.path} ({message.size} bytes, {kind})", title="Log saved", timeout=5, markup=False)

    @on(LogPane.Status)
    def _on_log_status(self, message: LogPane.Status) -> None:
        self.query_one(DetailTitle).log_status = message.text

    # --- terminal pane ------------------------------------------------------------------

    def action_terminal(self) -> None:
        row = self._job_for(missing=None, exited="The job has exited; its output stays in the log pane.")
        if row is None:
            return
        if not row.pty:
            self.notify("This job has no PTY: its output is in the log pane, type with i.", timeout=4)
            return
        if self.terminal is not None and self.terminal.session_id == row.session_id:
            focus_now(self.terminal)
            return
        self._close_terminal(refocus=False)
        pane = TerminalPane(self.registry, row.session_id, id="terminal")
        self.terminal = pane
        self.show_stack(self.selected)  # the log pane goes while the terminal pane is open
        self.query_one(FindBox).close()
        hint = self.query_one("#term-hint", Static)
        hint.update("[b]Terminal:[/] keys go to the job · [b]Ctrl-][/] back to the table · "
                    "[b]Ctrl-T[/] full screen · [b]Shift-PgUp[/] scroll back")
        hint.add_class("shown")
        self.query_one("#detail", Vertical).mount(pane, before=self.log_pane)
        focus_now(pane)
        self._show_row()

    def _close_terminal(self, refocus: bool = True) -> None:
        pane, self.terminal = self.terminal, None
        if pane is not None:
            pane.remove()
        self.query_one("#term-hint", Static).remove_class("shown")
        self.show_stack(self.selected)  # the log pane back (or the stack's detail)
        if refocus:
            focus_now(self.table)
        self._show_row()

    @on(TerminalPane.Leave)
    def _on_terminal_leave(self) -> None:
        self._close_terminal(refocus=True)

    @on(TerminalPane.FullAttach)
    def _on_terminal_full(self, message: TerminalPane.FullAttach) -> None:
        self._full_attach(message.session_id)

    @on(TerminalPane.Ended)
    def _on_terminal_ended(self) -> None:
        self._poke()

    def action_full_attach(self) -> None:
        row = self._job_for(missing=None, exited="The job has exited: nothing to attach to.")
        if row is not None:
            self._full_attach(row.session_id)

    def _full_attach(self, session_id: str) -> None:
        full_attach(self.app, self.registry, session_id)
        self._poke()

    # --- actions on jobs ----------------------------------------------------------------

    def _refused(self) -> bool:
        """True, with a toast, when this dashboard may not change jobs (web --read-only)."""
        return refused(self, self.registry)

    def _job_for(self, *, changes: bool = True, missing: str | None = "Select a job first.",
                 exited: str | None = None) -> JobRow | None:
        """The selected job an action works on, or None after a toast saying why not: the
        dashboard is read-only and the action `changes` the job; no job is selected (the
        `missing` toast; None: no toast); the job has exited and the action needs a running
        one (the `exited` toast)."""
        if changes and self._refused():
            return None
        self._catch_up()
        row = self.current_row()
        if row is None:
            if missing:
                self.notify(missing, timeout=3)
            return None
        if self.refused_for_stack(row):
            return None
        if exited and not row.running:
            self.notify(exited, timeout=4)
            return None
        return row

    def action_kill(self) -> None:
        row = self._job_for()
        if row is None:
            return

        def done(result: dict | None) -> None:
            if result is None:
                return
            status = result.get("status")
            if status == "killed":
                self.notify(safe_line(row.title)[:50], title="Killed", timeout=4, markup=False)
            elif status == "already_exited":
                self.notify(f"{safe_line(row.title)[:50]} had already exited", timeout=4, markup=False)
            elif status == "error":
                self.notify(result.get("error", "kill failed"), title="Kill failed", severity="error", markup=False)
                self._ended_by_us.discard(row.session_id)  # it may still end on its own
            self._statuses[row.session_id] = "killed-by-us"  # no second "exited" toast
            self._poke()

        def confirmed(dialog: KillScreen) -> None:
            self._ended_by_us.add(row.session_id)  # before the kill: the sampler may see the job end first
            self._kill(row.session_id, dialog)

        self.app.push_screen(KillScreen(row, confirmed), done)

    @work(thread=True, group="actions")
    def _kill(self, session_id: str, dialog: KillScreen) -> None:
        """The kill a KillScreen confirmed; the dialog shows how it went (and closes on success)."""
        result = self.registry.kill(session_id)
        self.app.call_from_thread(dialog.show_result, result)

    def action_rerun(self) -> None:
        """Run the selected job again as a new job (registry.restart: same command, cwd, env, PTY,
        name; the new job records ``rerun_of``) and select it; the old job and its log stay.  A
        job still running is killed first, after a confirmation (RerunScreen says why not a
        second copy)."""
        row = self._job_for()
        if row is None:
            return
        if not row.running:
            self._rerun(row.session_id)
            return

        def chosen(go: bool | None) -> None:
            if go:
                self._ended_by_us.add(row.session_id)  # before the kill: the sampler may see it first
                self.notify(safe_line(row.title)[:50], title="Stopping it to run it again", timeout=3,
                            markup=False)
                self._rerun(row.session_id)

        self.app.push_screen(RerunScreen(row), chosen)

    @work(thread=True, group="actions")
    def _rerun(self, session_id: str) -> None:
        result = self.registry.restart(session_id)
        if result.get("status") == "running":
            self.post_message(JobRerun(session_id, result["session_id"], str(result.get("command", ""))))
        else:
            self.post_message(ActionFailed("Rerun failed", result.get("error") or "could not start it again"))

    @on(JobRerun)
    def _on_rerun(self, message: JobRerun) -> None:
        self._pending_select = message.new
        self.notify(safe_line(message.command)[:60], title="Rerun started", timeout=3, markup=False)
        self._poke()

    def action_signal(self) -> None:
        row = self._job_for(exited="The job has exited.")
        if row is None:
            return

        def chosen(sig: str | None) -> None:
            if sig:
                self._send_signal(row.session_id, sig)

        self.app.push_screen(SignalScreen(row.name or row.command), chosen)

    @work(thread=True, group="actions")
    def _send_signal(self, session_id: str, sig: str) -> None:
        result = self.registry.signal(session_id, sig)
        if result.get("status") == "ok":
            self.post_message(SignalSent(session_id, sig))
        elif result.get("status") == "already_exited":
            self.post_message(JobAlreadyExited(session_id))
        else:
            self.post_message(ActionFailed("Signal", result.get("error") or str(result.get("status"))))

    def action_process_tree(self) -> None:
        row = self._job_for(changes=False)
        if row is not None:
            self.app.push_screen(TreeScreen(self.registry, row, self.table.host_name(row.host) if row.host else ""))

    def action_new_job(self) -> None:
        if self._refused():
            return
        self._catch_up()
        row = self.current_row()
        hosts = [(label, name) for label, name, _state in self.query_one(TopBar).hosts]
        host = row.host if row is not None else ""
        cwd = row.cwd if row is not None and row.cwd and (host or os.path.isdir(row.cwd)) else None

        def chosen(spec: dict | None) -> None:
            if spec:
                self._spawn(spec)

        self.app.push_screen(NewJobScreen(cwd, hosts, host), chosen)

    @work(thread=True, group="actions")
    def _spawn(self, spec: dict) -> None:
        where = {"host": spec["host"]} if spec.get("host") else {}  # only a HostSet takes host
        result = self.registry.spawn(spec["command"], cwd=spec.get("cwd"), pty=bool(spec.get("pty")),
                                     name=spec.get("name"), **where)
        if result.get("status") == "running":
            self.post_message(JobStarted(result["session_id"], str(result.get("command", ""))))
        else:
            self.post_message(ActionFailed("Start failed", result.get("error") or "could not start"))

    @on(InputBar.Send)
    def _on_input(self, message: InputBar.Send) -> None:
        if self._refused():
            return
        self._write(message.session_id, message.data, message.mode)

    @work(thread=True, group="actions")
    def _write(self, session_id: str, data: str, mode: SendMode) -> None:
        if mode is SendMode.SUBMIT:
            result = self.registry.submit(session_id, data, source="human")
        elif mode is SendMode.WRITE:
            result = self.registry.write(session_id, data, source="human")
        else:
            result = self.registry.close_stdin(session_id)
        status = result.get("status")
        if status == "ok":
            self.post_message(InputSent(session_id, mode))
        elif status == "already_exited":
            self.post_message(JobAlreadyExited(session_id))
        else:
            self.post_message(ActionFailed("Input", result.get("error") or str(status)))

    @on(JobStarted)
    def _on_started(self, message: JobStarted) -> None:
        self._pending_select = message.session_id
        self.notify(safe_line(message.command)[:60], title="Started", timeout=3, markup=False)
        self._poke()

    def action_toggle_pin(self) -> None:
        """Pin a leased job (kept when its owner ends), or unpin a pinned one."""
        row = self._job_for(exited="The job has exited.")
        if row is None:
            return
        if not row.lease:
            self.notify("This job has no lease: it runs until it ends or is killed.", timeout=4)
            return
        self._toggle_pin(row.session_id, row.lease != "pinned", row.title)

    @work(thread=True, group="actions")
    def _toggle_pin(self, session_id: str, pin: bool, title: str) -> None:
        result = self.registry.pin(session_id) if pin else self.registry.unpin(session_id)
        if result.get("status") == "ok":
            self.post_message(PinChanged(session_id, pin, title))
        elif result.get("status") == "already_exited":
            self.post_message(JobAlreadyExited(session_id))
        else:
            self.post_message(ActionFailed("Keep", result.get("error") or str(result.get("status"))))

    @on(PinChanged)
    def _on_pin_changed(self, message: PinChanged) -> None:
        what = "kept when its owner ends" if message.pinned else "ends with its owner again"
        self.notify(f"{safe_line(message.title)[:50]}: {what}", title="Kept" if message.pinned else "Not kept",
                    timeout=3, markup=False)
        self._poke()

    @on(SignalSent)
    def _on_signal_sent(self, message: SignalSent) -> None:
        self.notify(f"sent {message.signal}", timeout=3)
        self._poke()

    @on(InputSent)
    def _on_input_sent(self, message: InputSent) -> None:
        if message.mode is SendMode.EOF:
            self.notify("EOF sent (stdin closed)", timeout=3)
        self._poke()

    @on(JobAlreadyExited)
    def _on_already_exited(self) -> None:
        self.notify("The job has already exited.", severity="warning", timeout=4)
        self._poke()

    @on(ActionFailed)
    def _on_failed(self, message: ActionFailed) -> None:
        self.notify(message.error, title=message.title, severity="error", markup=False)
        self._poke()

    def action_copy_command(self) -> None:
        row = self._job_for(changes=False)
        if row is not None:
            self.app.copy_to_clipboard(row.command)
            self.notify(safe_line(row.command)[:60], title="Copied the command", timeout=3, markup=False)

    def action_copy_id(self) -> None:
        row = self._job_for(changes=False)
        if row is not None:
            self.app.copy_to_clipboard(row.session_id)
            self.notify(row.session_id, title="Copied the id", timeout=3, markup=False)

    # --- view actions -------------------------------------------------------------------

    def action_toggle_finished(self) -> None:
        self.show_finished = not self.show_finished
        self.notify("showing all jobs" if self.show_finished else "showing running jobs only", timeout=2)

    def action_cycle_host(self) -> None:
        hosts = [label for label, _name, _state in self.query_one(TopBar).hosts]
        if not hosts:
            self.notify("Only this machine's jobs are shown: no remote hosts (see --host and [hosts] "
                        "in the config file).", timeout=4, markup=False)
            return
        cycle = ["", "local", *hosts]
        now = self.host_filter if self.host_filter in cycle else ""
        self.host_filter = cycle[(cycle.index(now) + 1) % len(cycle)]
        if not self.host_filter:
            shown = "the jobs of every host"
        else:
            shown = f"{self.table.host_name('' if self.host_filter == 'local' else self.host_filter)}'s jobs only"
        self.notify(f"showing {shown}", timeout=2, markup=False)

    def action_cycle_sort(self) -> None:
        self.sort_mode = SORTS[(SORTS.index(self.sort_mode) + 1) % len(SORTS)]

    def action_search_jobs(self) -> None:
        self.query_one(JobSearch).open()

    @on(JobSearch.Changed, "JobSearch")
    def _search_changed(self, event: JobSearch.Changed) -> None:
        self.search = event.value.strip()

    @on(JobSearch.Closed)
    def _search_closed(self) -> None:
        focus_now(self.table)

    def action_focus_log(self) -> None:
        focus_now(self.terminal or self.log_pane)

    def action_focus_input(self) -> None:
        typing = "Select a running job to type into it."
        if self._job_for(missing=typing, exited=typing) is None:
            return
        if self.terminal is not None:
            focus_now(self.terminal)
            return
        self.input_bar.add_class("shown")
        focus_now(self.input_bar.line)

    def action_find_in_log(self) -> None:
        if self.terminal is not None:
            self._close_terminal(refocus=False)
        self.query_one(FindBox).open()

    def action_filter_log(self) -> None:
        if self._job_for(changes=False) is None:
            return
        if self.terminal is not None:
            self._close_terminal(refocus=False)
        self.query_one(FilterBar).open()

    @on(FilterBar.Apply)
    def _filter(self, message: FilterBar.Apply) -> None:
        self.log_pane.start_filter(message.pattern, message.context)
        focus_now(self.log_pane)

    @on(FilterBar.Cleared)
    def _filter_cleared(self) -> None:
        self.log_pane.clear_filter()
        focus_now(self.log_pane)

    @on(FindBox.Find)
    def _find(self, message: FindBox.Find) -> None:
        self.log_pane.search(message.query, forward=message.forward)

    @on(FindBox.Closed)
    def _find_closed(self) -> None:
        self.log_pane.clear_match()
        focus_now(self.log_pane)

    def action_find_next(self) -> None:
        self.log_pane.search(self.query_one(FindBox).value or self.log_pane.search_text, True)

    def action_find_previous(self) -> None:
        self.log_pane.search(self.query_one(FindBox).value or self.log_pane.search_text, False)

    def action_escape(self) -> None:
        box = self.query_one(JobSearch)
        if self.search:
            box.action_clear()
        else:
            focus_now(self.table)


def _short_home(home: os.PathLike[str] | str) -> str:
    s = os.fspath(home)
    user = os.path.expanduser("~")
    return "~" + s[len(user):] if user != "/" and s.startswith(user) else s
