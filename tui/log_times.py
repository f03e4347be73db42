"""The log pane's times: the HH:MM:SS gutter (``T``) and the "jump to a time" prompt (``@``).

Times come from the job's ``times.idx`` (core/supervisor/timeline.py): a line's time is when its first
byte arrived (lines between two records take the earlier record's time).
"""

from __future__ import annotations

import re
import time
from datetime import datetime

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static

from hermes_procs.core.supervisor.text import safe_line
from hermes_procs.core.supervisor.timeline import parse_since

from .dialogs import _DIALOG_CSS

__all__ = ["GUTTER", "TimeJumpScreen", "gutter_text", "parse_jump"]

GUTTER = 9  # columns: "HH:MM:SS "
_CLOCK = re.compile(r"(\d{1,2}):(\d{2})(?::(\d{2}))?")


def gutter_text(when: float | None) -> str:
    """The gutter of a line that arrived at ``when`` (epoch seconds; None: unknown)."""
    if when is None:
        return " " * GUTTER
    return time.strftime("%H:%M:%S ", time.localtime(when))


def parse_jump(text: str, now: float | None = None) -> float:
    """What the jump prompt takes, as an epoch time: a number of minutes ago (``5``), a
    duration ago (``90s``, ``5m``, ``1h30m``), a clock time today (``06:30``, ``06:30:15``;
    yesterday when that is still to come) or an ISO time.  Raises ValueError (one line)."""
    now = time.time() if now is None else now
    text = text.strip()
    m = _CLOCK.fullmatch(text)
    if m:
        hour, minute, second = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
        if hour > 23 or minute > 59 or second > 59:
            raise ValueError(f"no such time of day: {text}")
        today = datetime.fromtimestamp(now).replace(hour=hour, minute=minute, second=second, microsecond=0)
        when = today.timestamp()
        return when - 86400 if when > now else when
    try:
        minutes = float(text)
    except ValueError:
        pass
    else:
        if not minutes >= 0 or minutes == float("inf"):
            raise ValueError(f"minutes ago must be a number >= 0, not {text}")
        return now - 60 * minutes
    try:
        return parse_since(text, now)
    except ValueError:
        raise ValueError(f"type minutes ago (5), a duration (90s, 1h30m) or a time (06:30), not {text!r}") from None


class TimeJumpScreen(ModalScreen[float | None]):
    """Ask for a time to jump to; dismisses with an epoch time, or None when cancelled."""

    DEFAULT_CSS = _DIALOG_CSS.format(name="TimeJumpScreen") + """
    TimeJumpScreen > Vertical { width: 48; }
    TimeJumpScreen #jump-help { color: $text-muted; height: auto; }
    TimeJumpScreen #jump-error { color: $error; height: auto; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel", tooltip="close without jumping")]

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Jump to the output of", classes="title")
            yield Input(value="5m", id="jump-when", compact=True, select_on_focus=True)
            yield Static("minutes ago (5), a duration (90s, 1h30m) or a time (06:30)", id="jump-help")
            yield Static("", id="jump-error")

    def on_mount(self) -> None:
        self.query_one("#jump-when", Input).focus()

    @on(Input.Submitted)
    def _submit(self) -> None:
        try:
            when = parse_jump(self.query_one("#jump-when", Input).value)
        except ValueError as exc:
            self.query_one("#jump-error", Static).update(Text(safe_line(str(exc))))
            return
        self.dismiss(when)

    def action_cancel(self) -> None:
        self.dismiss(None)
