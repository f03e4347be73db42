"""The two search boxes, each a widget with its own keys.

* :class:`JobSearch` (``/``): filters the jobs table as you type; ``Enter`` keeps the filter and
  goes back to the table, ``Esc`` clears it.
* :class:`FindBox` (``Ctrl-F``): finds text in the selected job's log; ``Enter`` / ``↓`` next
  match, ``↑`` previous, ``Esc`` closes.

Both are hidden until opened (the ``shown`` class) and only post messages: the screen decides
what a search means.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual import on
from textual.binding import Binding
from textual.message import Message
from textual.widgets import Input

__all__ = ["SearchBox", "JobSearch", "FindBox"]


class SearchBox(Input):
    DEFAULT_CSS = """
    SearchBox { display: none; }
    SearchBox.shown { display: block; }
    """

    def open(self) -> None:
        self.add_class("shown")
        self.focus()

    def close(self) -> None:
        self.remove_class("shown")


class JobSearch(SearchBox):
    """Search jobs by command, name or id."""

    HELP_TITLE = "Job search (/)"
    BINDINGS = [
        Binding("escape", "clear", "Clear", show=False, tooltip="clear the search and close the box"),
    ]

    @dataclass
    class Closed(Message):
        """The box closed (the search it holds stays applied)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(placeholder="search jobs by command, name or id · Enter keeps · Esc clears",
                         compact=True, **kwargs)

    def action_clear(self) -> None:
        self.value = ""
        self.close()
        self.post_message(self.Closed())

    @on(Input.Submitted)
    def _keep(self, event: Input.Submitted) -> None:
        event.stop()
        if not self.value.strip():
            self.close()
        self.post_message(self.Closed())


class FindBox(SearchBox):
    """Find text in the log pane."""

    HELP_TITLE = "Find in the log (Ctrl-F)"
    BINDINGS = [
        Binding("down", "find(True)", "Next", show=False, tooltip="next match (also Enter)"),
        Binding("up", "find(False)", "Previous", show=False, tooltip="previous match"),
        Binding("escape", "dismiss", "Close", show=False, tooltip="close the find box"),
    ]

    @dataclass
    class Find(Message):
        query: str
        forward: bool

    @dataclass
    class Closed(Message):
        """The find box closed: the match highlight goes."""

    def __init__(self, **kwargs) -> None:
        super().__init__(placeholder="find in log · Enter / ↓ next · ↑ previous · Esc closes",
                         compact=True, **kwargs)

    def action_find(self, forward: bool) -> None:
        if self.value:
            self.post_message(self.Find(self.value, forward))

    def action_dismiss(self) -> None:
        self.close()
        self.post_message(self.Closed())

    @on(Input.Submitted)
    def _next(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_find(True)
