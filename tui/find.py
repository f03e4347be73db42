"""The two search boxes, each a widget with its own keys.

* :class:`JobSearch` (``/``): filters the jobs table as you type; ``Enter`` keeps the filter and
  goes back to the table, ``Esc`` clears it.
* :class:`FindBox` (``Ctrl-F``): finds text in the selected job's log; ``Enter`` / ``↓`` next
  match, ``↑`` previous, ``Esc`` closes.
* :class:`FilterBar` (``&``): a regex and a number of context lines; ``Enter`` shows only the
  matching lines of the whole log, ``Esc`` shows the whole log again.

Both are hidden until opened (the ``shown`` class) and only post messages: the screen decides
what a search means.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Input, Label

from hermes_procs.core.registry.userregex import PatternError, UserRegex, compile_user

from .keyroute import focus_now

__all__ = ["FilterBar", "FindBox", "JobSearch", "SearchBox"]


class SearchBox(Input):
    DEFAULT_CSS = """
    SearchBox { display: none; }
    SearchBox.shown { display: block; }
    """

    def open(self) -> None:
        self.add_class("shown")
        focus_now(self)

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


class FilterBar(Horizontal):
    """The log filter: a regular expression (case-insensitive unless it has a capital letter)
    and the lines of context around each match."""

    HELP_TITLE = "Log filter (&)"
    DEFAULT_CSS = """
    FilterBar { height: 1; display: none; }
    FilterBar.shown { display: block; }
    FilterBar Label { width: auto; padding: 0 1; color: $text-muted; }
    FilterBar #filter-re { width: 1fr; }
    FilterBar #filter-context { width: 6; }
    """
    BINDINGS = [
        Binding("escape", "clear", "Clear", show=False, tooltip="show the whole log again and close the bar"),
    ]

    @dataclass
    class Apply(Message):
        pattern: UserRegex
        context: int

    @dataclass
    class Cleared(Message):
        """The filter was removed."""

    def compose(self) -> ComposeResult:
        yield Label("filter")
        yield Input(placeholder="regex · Enter filters the whole log · Esc clears", id="filter-re", compact=True)
        yield Label("context")
        yield Input("0", id="filter-context", type="integer", compact=True)

    def open(self) -> None:
        self.add_class("shown")
        focus_now(self.query_one("#filter-re", Input))

    @on(Input.Submitted)
    def _apply(self, event: Input.Submitted) -> None:
        event.stop()
        text = self.query_one("#filter-re", Input).value
        if not text:
            self.action_clear()
            return
        try:
            pattern = compile_user(text, ignore_case=not any(c.isupper() for c in text), what="filter")
        except PatternError as exc:
            self.notify(str(exc), title="Filter", severity="error", markup=False)
            return
        context = int(self.query_one("#filter-context", Input).value or 0)
        self.post_message(self.Apply(pattern, max(0, min(context, 100))))

    def action_clear(self) -> None:
        self.remove_class("shown")
        self.post_message(self.Cleared())
