"""Input for the selected job: a line input (Enter submits), raw write, EOF, and the recent
input history showing who sent what (agent / human / cli) and when.

The bar never talks to the core itself: it posts :class:`InputBar.Send`; the app performs the
write in a worker with source "human".  The history arrives with the sampler's snapshots.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Button, Input, Static

from .messages import SendMode

__all__ = ["InputBar", "format_history"]

_SOURCE_STYLE = {"agent": "bold magenta", "human": "bold green", "cli": "bold cyan"}


def _when(t: Any) -> str:
    if isinstance(t, (int, float)):
        return time.strftime("%H:%M:%S", time.localtime(t))
    if isinstance(t, str) and t:
        try:
            return datetime.fromisoformat(t.replace("Z", "+00:00")).astimezone().strftime("%H:%M:%S")
        except ValueError:
            return t[-8:]
    return "--:--:--"


def format_history(entries: list[dict[str, Any]], limit: int = 3) -> Text:
    """The last ``limit`` inputs, newest last: ``12:03:01 human  "y⏎"``."""
    text = Text(no_wrap=True, overflow="ellipsis")
    shown = entries[-limit:]
    if not shown:
        text.append("no input sent yet", style="dim")
        return text
    for i, entry in enumerate(shown):
        if i:
            text.append("\n")
        source = str(entry.get("source") or "?")
        preview = str(entry.get("preview") if entry.get("preview") is not None else "")
        preview = preview.replace("\r", "⏎").replace("\n", "⏎").replace("\x04", "^D")
        preview = "".join(ch if ch.isprintable() or ch == "⏎" else "·" for ch in preview)
        text.append(_when(entry.get("t")) + " ", style="dim")
        text.append(f"{source:<5}", style=_SOURCE_STYLE.get(source, "bold"))
        text.append(f" {preview!r}" if preview else " (eof)")
        nbytes = entry.get("bytes")
        if isinstance(nbytes, int):
            text.append(f"  {nbytes} B", style="dim")
    return text


class InputBar(Vertical):
    """Line input + Send / Raw / EOF buttons + history, for the selected running job."""

    DEFAULT_CSS = """
    InputBar {
        height: auto;
        border-top: solid $primary 40%;
        padding: 0 0;
    }
    InputBar > Horizontal { height: 1; }
    InputBar .prompt { width: 2; color: $accent; text-style: bold; }
    InputBar Input { width: 1fr; }
    InputBar Button { min-width: 7; margin-left: 1; }
    InputBar #history { height: auto; max-height: 3; color: $text; padding-left: 2; }
    """

    HELP_TITLE = "Input bar (i)"
    BINDINGS = [
        Binding("enter", "submit", "Send", show=False, tooltip="send the line with a newline (source: human)"),
        # priority: the Input itself binds ctrl+d (delete right)
        Binding("ctrl+r", "raw", "Send raw", show=False, priority=True, tooltip="send the text raw, no newline"),
        Binding("ctrl+d", "eof", "EOF", show=False, priority=True, tooltip="send EOF (close the job's stdin)"),
    ]

    @dataclass
    class Send(Message):
        """The user wants to send ``data`` to the job's stdin."""

        session_id: str
        data: str
        mode: SendMode

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.session_id: str | None = None
        self._shown: str | None = None

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield Static("›", classes="prompt")
            yield Input(placeholder="type a line · Enter sends · ^R raw · ^D EOF", id="line", compact=True)
            yield Button("Send", id="send", variant="primary", compact=True)
            yield Button("Raw", id="raw", compact=True)
            yield Button("EOF", id="eof", variant="warning", compact=True)
        yield Static(format_history([]), id="history")

    def set_job(self, session_id: str | None) -> None:
        if session_id != self.session_id:
            self.session_id = session_id
            self.set_history([])

    def set_history(self, entries: list[dict[str, Any]]) -> None:
        text = format_history(entries)
        if text.plain != self._shown:
            self._shown = text.plain
            self.query_one("#history", Static).update(text)

    @property
    def line(self) -> Input:
        return self.query_one("#line", Input)

    def _send(self, mode: SendMode) -> None:
        if not self.session_id:
            return
        data = "" if mode is SendMode.EOF else self.line.value
        if mode is SendMode.WRITE and not data:
            return
        self.post_message(self.Send(self.session_id, data, mode))
        if mode is not SendMode.EOF:
            self.line.value = ""

    @on(Input.Submitted, "#line")
    @on(Button.Pressed, "#send")
    def _submit(self, event: Message) -> None:
        event.stop()
        self._send(SendMode.SUBMIT)

    def action_submit(self) -> None:  # Enter outside the line input (a button focused)
        self._send(SendMode.SUBMIT)

    @on(Button.Pressed, "#raw")
    def action_raw(self) -> None:
        self._send(SendMode.WRITE)

    @on(Button.Pressed, "#eof")
    def action_eof(self) -> None:
        self._send(SendMode.EOF)
