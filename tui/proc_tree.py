"""The selected job's process tree (``p``): a modal view of its processes, live, where one of
them can be signalled or killed.

Rows come from ``registry.tree`` (core/registry/processes.py: pid, command, state, CPU %, RSS, whether it
waits for input, the ports it listens on; for a remote job through the same call), fetched about once a second by a
worker thread that only posts :class:`TreeScreen.Rows` messages: the UI never waits for /proc
or a remote host. ``k`` (after a confirmation) and ``s`` go through
``registry.signal_process``, which signals only a process of the job (pid + start ticks), and
the exact process that was shown.
"""

from __future__ import annotations

import threading

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Button, DataTable, Label, Static

from hermes_procs.core.registry.interface import Registry
from hermes_procs.core.supervisor.text import safe_line

from .dialogs import _DIALOG_CSS, JOB_SIGNALS, ConfirmScreen, SignalScreen
from .jobs_table import fmt_bytes
from .readonly import refused
from .sampler import JobRow

__all__ = ["STATES", "KillProcessScreen", "TreeScreen", "tree_prefixes"]

REFRESH = 1.0  # seconds between two looks at the tree
STATES = {"R": "running", "S": "sleeping", "D": "disk wait", "T": "stopped", "t": "traced", "Z": "zombie",
          "X": "dead", "I": "idle", "W": "paging", "P": "parked"}
# the signals offered for one process: the job's four, and pausing / resuming it
PROCESS_SIGNALS = (*JOB_SIGNALS, "STOP", "CONT")
_COLUMNS = (("pid", "PID", 8), ("state", "STATE", 10), ("cpu", "CPU%", 6), ("rss", "RSS", 7),
            ("input", "", 7), ("ports", "PORTS", 12), ("command", "COMMAND", None))


def tree_prefixes(rows: list[dict]) -> list[str]:
    """The ``├─ `` / ``└─ `` / ``│  `` drawing before each command, for rows in tree order
    (each right after its parent, with its ``depth``)."""
    last: list[bool] = []
    for i, row in enumerate(rows):  # is it the last of its siblings? (no later row at its depth
        depth = row["depth"]  # before one shallower)
        after = (r["depth"] for r in rows[i + 1:])
        last.append(next((d for d in after if d <= depth), -1) != depth)
    out: list[str] = []
    open_levels: list[bool] = []  # per depth: a later sibling still comes (draw │)
    for row, is_last in zip(rows, last, strict=True):
        depth = row["depth"]
        del open_levels[depth:]
        prefix = "".join("│  " if more else "   " for more in open_levels[1:])
        out.append(prefix + ("└─ " if is_last else "├─ ") if depth else "")
        open_levels.append(not is_last)
    return out


class KillProcessScreen(ConfirmScreen):
    """Confirm killing one process (SIGKILL). Dismisses with True to kill."""

    DEFAULT_CSS = _DIALOG_CSS.format(name="KillProcessScreen") + """
    KillProcessScreen > Vertical { border: thick $error 80%; }
    """
    def __init__(self, process: dict) -> None:
        super().__init__()
        self.process = process

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"Kill process {self.process['pid']}?", classes="title")
            yield Static(Text.assemble(("command  ", "dim"), safe_line(self.process["command"])[:200]))
            yield Static("It gets SIGKILL: it ends at once, the rest of the job keeps running. "
                         "(s sends a gentler signal.)", classes="dim")
            with Horizontal(classes="buttons"):
                yield Button("Cancel (Esc)", id="cancel", compact=True)
                yield Button("Kill (Enter)", id="confirm", variant="error", compact=True)


class TreeScreen(ModalScreen[None]):
    """The processes of one job, refreshed about once a second."""

    HELP_TITLE = "Process tree (p)"
    DEFAULT_CSS = """
    TreeScreen { align: center middle; background: $background 60%; }
    TreeScreen > Vertical {
        width: 96%; height: 80%; border: thick $primary 80%; background: $surface; padding: 0 1;
    }
    TreeScreen .title { text-style: bold; width: 100%; height: 1; }
    TreeScreen #tree-summary { height: 1; color: $text-muted; }
    TreeScreen #tree-summary.error { color: $error; text-style: bold; }
    TreeScreen DataTable { height: 1fr; }
    TreeScreen #tree-hint { height: auto; color: $text-muted; }  /* two lines at 80 columns */
    """
    BINDINGS = [
        Binding("k", "kill_process", "Kill", tooltip="kill the highlighted process (SIGKILL; asks first)",
                id="kill_process"),
        Binding("s", "signal_process", "Signal",
                tooltip="send the highlighted process a signal: INT, TERM, HUP, KILL, STOP, CONT",
                id="signal_process"),
        Binding("escape,p", "close", "Close", tooltip="close the process tree", id="close_tree"),
    ]

    class Rows(Message):
        """A new look at the tree: registry.tree's result (or an error dict)."""

        def __init__(self, result: dict) -> None:
            super().__init__()
            self.result = result

    class Signalled(Message):
        """registry.signal_process's result for one process."""

        def __init__(self, process: dict, sig: str, result: dict) -> None:
            super().__init__()
            self.process, self.sig, self.result = process, sig, result

    def __init__(self, registry: Registry, job: JobRow, host_name: str = "") -> None:
        super().__init__()
        self.registry = registry
        self.job = job
        self.host_name = host_name
        self.processes: list[dict] = []  # the rows shown, in table order
        self._keys: list[str] = []
        self._cells_shown: list[tuple] = []
        self._wake = threading.Event()
        self._stop = threading.Event()

    def compose(self) -> ComposeResult:
        job = self.job
        title = Text.assemble(("Processes of ", "bold"), (job.session_id, "cyan"))
        if job.name:
            title.append(f"  {job.name}", style="bold")
        title.append(f"  {safe_line(job.command)[:80]}")
        if job.host:
            title.append(f"  on {self.host_name or job.host}", style="bold")
        title.no_wrap, title.overflow = True, "ellipsis"  # a long word is cut, not wrapped out of sight
        with Vertical():
            yield Label(title, classes="title")
            yield Static("reading…", id="tree-summary")
            yield DataTable(cursor_type="row", zebra_stripes=True, id="tree-table")
            yield Static(Text("k kills a process (asks first) · s sends it a signal · live, once a second · "
                              "Esc closes", style="dim"), id="tree-hint")

    def on_mount(self) -> None:
        self.query_one(DataTable).focus()
        self._poll()

    def on_unmount(self) -> None:
        self._stop.set()
        self._wake.set()

    # --- the worker: one look a second, never on the UI thread ----------------------------

    @work(thread=True, exclusive=True, group="tree")
    def _poll(self) -> None:
        while not self._stop.is_set():
            try:
                result = self.registry.tree(self.job.session_id)
            except Exception as exc:  # noqa: BLE001 - a remote host gone: shown, the loop goes on
                result = {"status": "error", "error": str(exc) or type(exc).__name__}
            if self._stop.is_set():
                break
            self.post_message(self.Rows(result if isinstance(result, dict) else {"status": "error"}))
            self._wake.wait(REFRESH)
            self._wake.clear()

    @on(Rows)
    def _on_rows(self, message: Rows) -> None:
        result = message.result
        summary = self.query_one("#tree-summary", Static)
        if result.get("status") not in ("running", "exited"):
            summary.update(Text(safe_line(str(result.get("error") or "the tree could not be read"))))
            summary.add_class("error")
            return
        summary.remove_class("error")
        rows = result.get("processes") or []
        self._show(rows)
        summary.update(self._summary(result, rows))

    @staticmethod
    def _summary(result: dict, rows: list[dict]) -> Text:
        if not rows:
            return Text("The job has no processes left." if result["status"] == "exited"
                        else "No process of the job is running right now.")
        text = Text(f"{len(rows)} process{'es' * (len(rows) != 1)}", style="bold")
        text.append(f" · CPU {sum(r['cpu_percent'] for r in rows):.1f}% · RSS "
                    f"{fmt_bytes(sum(r['rss_bytes'] for r in rows))}")
        waiting = sum(bool(r["awaiting_input"]) for r in rows)
        if waiting:
            text.append("  ")
            text.append(f" {waiting} waiting for input ", style="bold black on yellow")
        if result["status"] == "exited":
            text.append("  · the job has exited: these are its leftovers", style="yellow")
        return text

    def _show(self, rows: list[dict]) -> None:
        """Update the table in place when the same processes are shown in the same order,
        else rebuild it, keeping the cursor on the same process."""
        table = self.query_one(DataTable)
        keys = [f"{r['pid']}:{r['start_ticks']}" for r in rows]
        room = self._command_room(table)
        cells = [self._cells(r, prefix, room) for r, prefix in zip(rows, tree_prefixes(rows), strict=True)]
        if keys == self._keys:
            for key, new, old in zip(keys, cells, self._cells_shown, strict=True):
                for (col, _label, _width), value, before in zip(_COLUMNS, new, old, strict=True):
                    if value != before:
                        table.update_cell(key, col, value)
        else:
            current = self._keys[table.cursor_row] if 0 <= table.cursor_row < len(self._keys) else None
            # the command column as wide as the room its cells are cut to: never left as narrow as
            # its header when its auto width was not measured again (a command that grew by exec)
            table.clear(columns=True)
            for col, label, width in _COLUMNS:
                table.add_column(label, key=col, width=width or room)
            for key, row_cells in zip(keys, cells, strict=True):
                table.add_row(*row_cells, key=key)
            if current in keys:
                table.move_cursor(row=keys.index(current), animate=False)
        self._keys, self._cells_shown, self.processes = keys, cells, rows

    @staticmethod
    def _command_room(table: DataTable) -> int:
        """Cells left for the command (cut with an ellipsis: no sideways scrolling)."""
        fixed = sum(width or 0 for _key, _label, width in _COLUMNS) + 2 * table.cell_padding * len(_COLUMNS)
        return max(20, table.size.width - fixed - 2) if table.size.width else 200  # 2: the scrollbar

    def on_resize(self) -> None:
        self._keys = []  # rebuild at the next look, cut to the new width
        self._wake.set()

    @staticmethod
    def _cells(row: dict, prefix: str, room: int) -> tuple:
        state = row["state"]
        style = {"R": "bold green", "T": "bold yellow", "t": "bold yellow", "Z": "red", "D": "magenta"}.get(state, "")
        waiting = Text(" input ", style="bold black on yellow") if row["awaiting_input"] else Text("")
        command = Text(prefix, style="dim")
        command.append(safe_line(row["command"]) or "?")
        if len(command) > room:
            command.truncate(room - 1)
            command.append("…")
        ports = Text(",".join(str(p) for p in row.get("ports") or ()), style="cyan", no_wrap=True,
                     overflow="ellipsis")
        return (Text(str(row["pid"]), style="cyan"), Text(STATES.get(state, state), style=style),
                Text(f"{row['cpu_percent']:.1f}", justify="right"), Text(fmt_bytes(row["rss_bytes"]), justify="right"),
                waiting, ports, command)

    # --- actions on the highlighted process -----------------------------------------------

    def highlighted(self) -> dict | None:
        row = self.query_one(DataTable).cursor_row
        return self.processes[row] if 0 <= row < len(self.processes) else None

    def _target(self) -> dict | None:
        if refused(self, self.registry):
            return None
        process = self.highlighted()
        if process is None:
            self.notify("No process to act on.", timeout=3)
        return process

    def action_kill_process(self) -> None:
        process = self._target()
        if process is None:
            return

        def confirmed(yes: bool | None) -> None:
            if yes:
                self._signal(process, "KILL")

        self.app.push_screen(KillProcessScreen(process), confirmed)

    def action_signal_process(self) -> None:
        process = self._target()
        if process is None:
            return

        def chosen(sig: str | None) -> None:
            if sig:
                self._signal(process, sig)

        self.app.push_screen(SignalScreen(f"process {process['pid']}", PROCESS_SIGNALS), chosen)

    @work(thread=True, group="tree-signal")
    def _signal(self, process: dict, sig: str) -> None:
        try:
            result = self.registry.signal_process(self.job.session_id, process["pid"], sig,
                                                  start_ticks=process["start_ticks"])
        except Exception as exc:  # noqa: BLE001 - the core returns dicts; a remote may raise
            result = {"status": "error", "error": str(exc) or type(exc).__name__}
        self.post_message(self.Signalled(process, sig, result))

    @on(Signalled)
    def _on_signalled(self, message: Signalled) -> None:
        pid = message.process["pid"]
        if message.result.get("status") == "ok":
            self.notify(f"sent {message.sig} to process {pid}", timeout=3, markup=False)
        else:
            self.notify(message.result.get("error") or "failed", title=f"Signal to {pid} failed",
                        severity="error", markup=False)
        self._wake.set()  # look again now

    def action_close(self) -> None:
        self.dismiss(None)
