"""The dashboard's keys for stacks (mixed into MainScreen): up (`U`, the stack's file read
again), down (`D`) and restart (`R`) of the selected stack, the stack filter (`S`), and Enter on
a stack's row to fold or unfold it. Selecting a stack's row shows its jobs' states and messages
in the detail area. The work runs in thread workers through the registry (up, down, restart_stack)."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Button, Label, Static

from hermes_procs.core.supervisor.text import safe_line

from .dialogs import _DIALOG_CSS, ConfirmScreen
from .messages import ActionFailed, StackChanged
from .readonly import refused
from .sampler import JobRow, SnapshotData
from .stack_view import StackGroups, header_id, is_header, summary_text

__all__ = ["StackActions", "StackConfirmScreen"]


class StackConfirmScreen(ConfirmScreen):
    """Confirm `down` or `restart` of a stack (Enter on the button; no letter confirms)."""

    DEFAULT_CSS = _DIALOG_CSS.format(name="StackConfirmScreen") + """
    StackConfirmScreen > Vertical { border: thick $warning 80%; }
    StackConfirmScreen #stack-note { height: auto; color: $text-muted; }
    """

    def __init__(self, question: str, note: str, button: str) -> None:
        super().__init__()
        self.question, self.note, self.button = question, note, button

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(self.question), classes="title")
            yield Static(Text(self.note), id="stack-note")
            with Horizontal(classes="buttons"):
                yield Button("Cancel (Esc)", id="cancel", compact=True)
                yield Button(f"{self.button} (Enter)", id="confirm", variant="warning", compact=True)


class StackActions(Screen):
    """Stack keys and the stack rows of the jobs table (MainScreen's base)."""

    HELP_TITLE = "Stacks"
    BINDINGS = [
        Binding("U", "stack_up", "Up", show=False,
                tooltip="bring the selected stack up again from its file (stacks: hermes-procs up)", id="stack_up"),
        Binding("D", "stack_down", "Down", show=False,
                tooltip="stop the selected stack: its jobs, dependents first (asks)", id="stack_down"),
        Binding("R", "stack_restart", "Restart stack", show=False,
                tooltip="restart the selected stack in dependency order (asks)", id="stack_restart"),
        Binding("S", "cycle_stack", "Stack", show=False,
                tooltip="show one stack's jobs: every job, each stack (Enter on a stack's row folds it)",
                id="cycle_stack"),
    ]

    registry: Any
    terminal: Any  # MainScreen's terminal pane, while one is open
    _stack_groups: StackGroups | None = None

    @property
    def stack_groups(self) -> StackGroups:
        if self._stack_groups is None:
            self._stack_groups = StackGroups()
        return self._stack_groups

    # --- the table ----------------------------------------------------------------------
    def arrange_stacks(self, data: SnapshotData) -> list[JobRow]:
        """The rows for the table, with the stacks' header rows; sets its groups and hidden rows."""
        rows, groups, hidden = self.stack_groups.arrange(data.jobs, data.stacks)
        table = self.query_one("#jobs")
        table.groups, table.hidden = groups, hidden  # type: ignore[attr-defined]
        return rows

    def _refilter_stacks(self) -> None:
        if self.snapshot is not None:  # type: ignore[attr-defined]
            self.table.apply(self.arrange_stacks(self.snapshot))  # type: ignore[attr-defined]

    def selected_stack(self) -> str | None:
        """The stack of the selected row (its header, or one of its jobs), after a toast when none."""
        self._catch_up()  # type: ignore[attr-defined]
        sid = self.selected  # type: ignore[attr-defined]
        row = self.table.rows_by_id.get(sid) if sid else None  # type: ignore[attr-defined]
        name = self.stack_groups.stack_of(row)
        if name is None:
            self.notify("Select a stack's row (or one of its jobs) first. `hermes-procs up` in a project folder "
                        "starts one.", timeout=4, markup=False)
        return name

    def toggle_stack(self, sid: str) -> None:
        """Enter on a stack's row: fold or unfold it."""
        self.stack_groups.toggle(sid.removeprefix("stack:"))
        self._refilter_stacks()
        self.table.select_id(sid)  # type: ignore[attr-defined]

    def show_stack(self, sid: str | None) -> bool:
        """The detail area of a selected stack row (True), or back to the log pane (False)."""
        detail = self.query_one("#stack-detail", Static)
        stack = self.stack_groups.stacks.get(sid.removeprefix("stack:")) if is_header(sid) and sid else None
        detail.set_class(stack is not None, "shown")
        self.query_one("#log").display = stack is None and self.terminal is None  # an open terminal pane hides it
        if stack is not None:
            detail.update(summary_text(stack))
        return stack is not None

    def refused_for_stack(self, row: JobRow | None) -> bool:
        """A stack's row chosen for an action on one job: say what works on a stack instead."""
        if row is None or not is_header(row.session_id):
            return False
        self.notify("This row is a stack: Enter folds it, U brings it up, R restarts it, D stops it.", timeout=4)
        return True

    # --- keys ---------------------------------------------------------------------------
    def action_cycle_stack(self) -> None:
        names = sorted(self.stack_groups.stacks)
        if not names:
            self.notify("No stacks here: `hermes-procs up` in a project folder starts one.", timeout=4, markup=False)
            return
        cycle = ["", *names]
        now = self.stack_groups.only if self.stack_groups.only in cycle else ""
        self.stack_groups.only = cycle[(cycle.index(now) + 1) % len(cycle)]
        self._refilter_stacks()
        only = self.stack_groups.only
        self.notify(f"showing stack {safe_line(only)} only" if only else "showing every job", timeout=2,
                    markup=False)
        if only:
            self.table.select_id(header_id(only))  # type: ignore[attr-defined]

    def action_stack_up(self) -> None:
        name = None if refused(self, self.registry) else self.selected_stack()
        if name is not None:
            source = self.stack_groups.stacks[name].get("source")
            self._stack_call("up", name, source)

    def action_stack_down(self) -> None:
        self._confirm_then("down", f"Stop stack {name}?" if (name := self._stack_for_change()) else "",
                           "Its jobs get SIGTERM, dependents first (SIGKILL after each job's stop_grace); "
                           "its supervisor exits. `hermes-procs up` (or U) brings it back.", "Down", name)

    def action_stack_restart(self) -> None:
        self._confirm_then("restart", f"Restart stack {name}?" if (name := self._stack_for_change()) else "",
                           "Its jobs stop, dependents first, then start again in dependency order; each "
                           "waits for its dependencies to be ready.", "Restart", name)

    def _stack_for_change(self) -> str | None:
        return None if refused(self, self.registry) else self.selected_stack()

    def _confirm_then(self, op: str, question: str, note: str, button: str, name: str | None) -> None:
        if name is None:
            return

        def chosen(go: bool | None) -> None:
            if go:  # its jobs end by our hand: no exit toast for each of them
                jobs = self.stack_groups.stacks.get(name, {}).get("jobs") or []
                self._ended_by_us.update(j["session_id"] for j in jobs if j.get("session_id"))  # type: ignore[attr-defined]
                self._stack_call(op, name, None)

        self.app.push_screen(StackConfirmScreen(safe_line(question), note, button), chosen)

    @work(thread=True, group="stacks")
    def _stack_call(self, op: str, name: str, source: str | None) -> None:
        if op == "up":
            result = self.registry.up(source, name)
        elif op == "down":
            result = self.registry.down(name)
        else:
            result = self.registry.restart_stack(name)
        if isinstance(result, dict) and result.get("status") != "error":
            self.post_message(StackChanged(name, op, str(result.get("state", ""))))
        else:
            error = result.get("error") if isinstance(result, dict) else str(result)
            self.post_message(ActionFailed(f"Stack {op} failed", str(error)))

    @on(StackChanged)
    def _on_stack_changed(self, message: StackChanged) -> None:
        done = {"up": "is coming up", "down": "is down", "restart": "is restarting"}[message.op]
        self.notify(f"stack {message.stack} {done} ({message.state})", timeout=4, markup=False)
        self._poke()  # type: ignore[attr-defined]
