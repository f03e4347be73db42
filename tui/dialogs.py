"""Modal screens: kill and rerun confirmations, signal chooser, new job, save the log (the help
screen is in help.py)."""

from __future__ import annotations

import os
from collections.abc import Callable

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, OptionList, Select, Static
from textual.widgets.option_list import Option

from hermes_procs.core.registry.model import SENDABLE_SIGNALS
from hermes_procs.core.supervisor.text import safe_line, safe_text

from .keyroute import TypeAheadGuard, focus_now
from .sampler import JobRow

__all__ = ["ConfirmScreen", "KillScreen", "NewJobScreen", "RerunScreen", "SaveLogScreen", "SignalScreen"]

_DIALOG_CSS = """
{name} {{
    align: center middle;
    background: $background 60%;
}}
{name} > Vertical {{
    width: 64;
    max-width: 96%;
    height: auto;
    max-height: 96%;
    border: thick $primary 80%;
    background: $surface;
    padding: 0 1;
}}
{name} .title {{
    text-style: bold;
    width: 100%;
    content-align: center middle;
    margin-bottom: 1;
}}
{name} .buttons {{
    height: auto;
    align: right middle;
    margin-top: 1;
}}
{name} .buttons Button {{
    margin-left: 1;
    min-width: 10;
}}
"""


class ConfirmScreen(TypeAheadGuard, ModalScreen[bool]):
    """A yes/no question about something that cannot be undone: a subclass composes it with a
    ``#cancel`` and a ``#confirm`` button. The confirm button has the focus; dismisses with True
    (Enter on it, or a click) or False (n, Esc, Cancel). No letter confirms, and keys typed
    before the question was on screen are dropped (tui/keyroute.py): text typed into the
    dashboard by mistake never answers it."""

    BINDINGS = [Binding("escape,n", "cancel", "Cancel")]

    def on_mount(self) -> None:
        self.arm()
        focus_now(self.query_one("#confirm", Button))

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(False)

    @on(Button.Pressed, "#confirm")
    def action_confirm(self) -> None:
        self.dismiss(True)


class KillScreen(TypeAheadGuard, ModalScreen[dict | None]):
    """Confirm a kill (Enter on the Kill button, as ConfirmScreen: no letter confirms). The
    screen that shows it does the kill (`on_confirm(dialog)`) and hands the result to
    `show_result`: the dialog closes with it, or shows the survivors when the tree could not be
    killed.

    Dismisses with the kill's result dict (or None when cancelled before it).
    """

    DEFAULT_CSS = _DIALOG_CSS.format(name="KillScreen") + """
    KillScreen > Vertical { border: thick $error 80%; }
    KillScreen #kill-status { height: auto; color: $text-muted; }
    KillScreen #kill-status.error { color: $error; text-style: bold; }
    """
    BINDINGS = [Binding("escape,n", "cancel", "Cancel")]

    def __init__(self, job: JobRow, on_confirm: Callable[[KillScreen], None]) -> None:
        """`on_confirm(dialog)`: the kill is confirmed; do it, then call `dialog.show_result`."""
        super().__init__()
        self.job = job
        self.on_confirm = on_confirm
        self.result: dict | None = None

    def compose(self) -> ComposeResult:
        with Vertical():
            running = self.job.running
            yield Label("Kill this job?" if running else "Kill what this job left running?", classes="title")
            yield Static(Text.assemble(("name     ", "dim"), self.job.name or "-"))
            yield Static(Text.assemble(("command  ", "dim"), self.job.command))
            yield Static(Text.assemble(("id       ", "dim"), self.job.session_id,
                                       ("   pid ", "dim"), str(self.job.pid or "-")))
            yield Static("Its whole process tree gets SIGTERM, then SIGKILL after the grace period." if running else
                         f"It has ended ({self.job.label}). The processes it left running, if any, get "
                         "SIGTERM, then SIGKILL after the grace period.", id="kill-status")
            with Horizontal(classes="buttons"):
                yield Button("Cancel (Esc)", id="cancel", compact=True)
                yield Button("Kill (Enter)", id="confirm", variant="error", compact=True)

    def on_mount(self) -> None:
        self.arm()
        focus_now(self.query_one("#confirm", Button))

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(self.result)

    @on(Button.Pressed, "#confirm")
    def action_confirm(self) -> None:
        if self.result is not None:  # already done: the button now closes
            self.dismiss(self.result)
            return
        self.query_one("#confirm", Button).disabled = True
        self.query_one("#kill-status", Static).update("Killing…")
        self.on_confirm(self)

    def show_result(self, result: dict) -> None:
        """How the kill went: close with it, or show why it failed (and the survivors)."""
        self.result = result
        status = result.get("status")
        if status in ("killed", "already_exited"):
            self.dismiss(result)
            return
        survivors = result.get("survivors") or []
        msg = result.get("error") or "The kill failed."
        if survivors:
            msg += "\nStill alive: " + ", ".join(str(p) for p in survivors)
        widget = self.query_one("#kill-status", Static)
        widget.update(Text(safe_text(msg)))
        widget.add_class("error")
        button = self.query_one("#confirm", Button)
        button.label = "Close"
        button.disabled = False
        button.focus()


class RerunScreen(ConfirmScreen):
    """Confirm the rerun of a job that still runs: it is killed, then started again as a new job.

    Dismisses with True (go on) or False.  The running copy is stopped rather than a second one
    started beside it: two copies of a dev server, a watcher or a build fight over the same port,
    lock files and output folder, and "restart" means stop-then-start in pm2, process-compose and
    mprocs alike.  A second copy is one ``n`` away (the command is copied with ``c``).
    """

    DEFAULT_CSS = _DIALOG_CSS.format(name="RerunScreen") + """
    RerunScreen > Vertical { border: thick $warning 80%; }
    RerunScreen #rerun-note { height: auto; color: $text-muted; margin-top: 1; }
    """
    def __init__(self, job: JobRow) -> None:
        super().__init__()
        self.job = job

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("This job is still running: kill it and run it again?", classes="title")
            yield Static(Text.assemble(("name     ", "dim"), self.job.name or "-"))
            yield Static(Text.assemble(("command  ", "dim"), self.job.command))
            yield Static(Text.assemble(("cwd      ", "dim"), self.job.cwd or "-"))
            yield Static(Text.assemble(("id       ", "dim"), self.job.session_id, ("   pid ", "dim"),
                                       str(self.job.pid or "-"), ("   PTY" if self.job.pty else "", "dim")))
            yield Static("Its whole process tree gets SIGTERM (SIGKILL after the grace period); the same "
                         "command then starts as a new job, with the same directory, environment and PTY. "
                         "The old job and its log stay.", id="rerun-note")
            with Horizontal(classes="buttons"):
                yield Button("Cancel (Esc)", id="cancel", compact=True)
                yield Button("Kill and rerun (Enter)", id="confirm", variant="warning", compact=True)


# the signals offered for a job's process group; one process also gets STOP and CONT (proc_tree)
JOB_SIGNALS = ("INT", "TERM", "HUP", "KILL")
# the letter that picks each in the signal dialog
SIGNAL_KEYS = {"INT": "i", "TERM": "t", "HUP": "h", "KILL": "k", "STOP": "s", "CONT": "c"}


class SignalScreen(TypeAheadGuard, ModalScreen[str | None]):
    """Choose one of `signals` (names of SENDABLE_SIGNALS, shown with what each is for) to send
    to `target` (a job's name or command, "process 1234"): Enter on one, or its letter
    (SIGNAL_KEYS). Keys typed before the dialog was on screen are dropped (tui/keyroute.py), so
    text typed by mistake never picks a signal. Dismisses with its name or None."""

    DEFAULT_CSS = _DIALOG_CSS.format(name="SignalScreen") + """
    SignalScreen OptionList { height: auto; border: none; }
    """
    BINDINGS = [
        Binding("escape", "cancel", "Cancel"),
        *(Binding(key, f"pick('{name}')", name, show=False) for name, key in SIGNAL_KEYS.items()),
    ]

    def __init__(self, target: str, signals: tuple[str, ...] = JOB_SIGNALS) -> None:
        super().__init__()
        self.target = target
        self.signals = signals

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(Text(safe_line(f"Send a signal to {self.target}")[:60]), classes="title")  # not markup
            yield OptionList(
                *[Option(Text.assemble((f"{SIGNAL_KEYS[name]}  ", "dim"), (f"{name:<5}", "bold"),
                                       f" {SENDABLE_SIGNALS[name]}"), id=name)
                  for name in self.signals],
                id="signals",
            )
            keys = "/".join(SIGNAL_KEYS[name] for name in self.signals)
            yield Static(Text(f"Enter sends · {keys} pick · Esc cancels", style="dim"))

    def on_mount(self) -> None:
        self.arm()
        focus_now(self.query_one(OptionList))

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_pick(self, name: str) -> None:
        if name in self.signals:  # STOP/CONT only where offered
            self.dismiss(name)

    def action_cancel(self) -> None:
        self.dismiss(None)


class NewJobScreen(ModalScreen[dict | None]):
    """Command, working directory, PTY toggle, name. Dismisses with spawn kwargs or None."""

    DEFAULT_CSS = _DIALOG_CSS.format(name="NewJobScreen") + """
    NewJobScreen Input { margin-bottom: 1; }
    NewJobScreen Checkbox { margin-bottom: 1; }
    NewJobScreen Label.field { color: $text-muted; }
    NewJobScreen #new-error { color: $error; height: auto; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, cwd: str | None = None, hosts: list[tuple[str, str]] | None = None,
                 host: str = "") -> None:
        """`hosts`: the remote hosts one may start on, as (label, name); `host`: the preselected one
        ("" = this machine); `cwd` is then a folder of that host."""
        super().__init__()
        self.cwd = cwd or ("" if host else os.getcwd())
        self.hosts = hosts or []
        self.host = host if any(label == host for label, _ in self.hosts) else ""

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("New job", classes="title")
            yield Label("Command (run by the shell)", classes="field")
            yield Input(placeholder="e.g. make test", id="new-command", compact=True)
            if self.hosts:
                yield Label("Host", classes="field")
                yield Select([("this machine", ""), *((name, label) for label, name in self.hosts)],
                             value=self.host, allow_blank=False, id="new-host", compact=True)
            yield Label("Working directory", classes="field")
            yield Input(value=self.cwd, id="new-cwd", placeholder="the host's home folder", compact=True)
            yield Label("Name (optional)", classes="field")
            yield Input(placeholder="a short label", id="new-name", compact=True)
            yield Checkbox("Run in a PTY (for REPLs, prompts, full-screen programs)", id="new-pty", compact=True)
            yield Static("", id="new-error")
            with Horizontal(classes="buttons"):
                yield Button("Cancel", id="cancel", compact=True)
                yield Button("Start", id="start", variant="primary", compact=True)

    def on_mount(self) -> None:
        focus_now(self.query_one("#new-command", Input))

    @on(Input.Submitted)
    @on(Button.Pressed, "#start")
    def _start(self) -> None:
        command = self.query_one("#new-command", Input).value.strip()
        if not command:
            self.query_one("#new-error", Static).update("Type a command first.")
            self.query_one("#new-command", Input).focus()
            return
        cwd = self.query_one("#new-cwd", Input).value.strip() or None
        host = str(self.query_one("#new-host", Select).value) if self.hosts else ""
        if cwd and not host and not os.path.isdir(os.path.expanduser(cwd)):
            self.query_one("#new-error", Static).update(Text(safe_line(f"No such directory: {cwd}")))
            return
        self.dismiss(
            {
                "command": command,
                "host": host,
                "cwd": os.path.expanduser(cwd) if cwd and not host else cwd,
                "pty": self.query_one("#new-pty", Checkbox).value,
                "name": self.query_one("#new-name", Input).value.strip() or None,
            }
        )

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


class SaveLogScreen(ModalScreen[tuple[str, bool] | None]):
    """Ask where to save the log and whether as plain text. Dismisses with (path, plain) or None."""

    DEFAULT_CSS = _DIALOG_CSS.format(name="SaveLogScreen") + """
    SaveLogScreen Input { margin-bottom: 1; }
    SaveLogScreen #save-error { color: $error; height: auto; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, suggested: str) -> None:
        super().__init__()
        self.suggested = suggested

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Save the whole log", classes="title")
            yield Input(value=self.suggested, id="save-path", compact=True)
            yield Checkbox("Plain text (no colours or escape sequences)", value=True, id="save-plain", compact=True)
            yield Static("", id="save-error")
            with Horizontal(classes="buttons"):
                yield Button("Cancel", id="cancel", compact=True)
                yield Button("Save", id="save", variant="primary", compact=True)

    def on_mount(self) -> None:
        focus_now(self.query_one("#save-path", Input))

    @on(Input.Submitted)
    @on(Button.Pressed, "#save")
    def _save(self) -> None:
        path = os.path.expanduser(self.query_one("#save-path", Input).value.strip())
        error = ""
        if not path:
            error = "Type a file name."
        elif os.path.exists(path):
            error = f"{path} exists: choose another name."
        elif not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            error = f"No such directory: {os.path.dirname(path)}"
        if error:
            self.query_one("#save-error", Static).update(Text(safe_line(error)))
            return
        self.dismiss((os.path.abspath(path), self.query_one("#save-plain", Checkbox).value))

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)
