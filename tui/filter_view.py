"""The log pane's filtered view (``&``): the rows a filter scan (log_filter.py) has found so
far, how far the scan is (following a running job's new lines, once at its end), and the
status line that says so."""

from __future__ import annotations

from dataclasses import dataclass, field

from hermes_procs.core.registry.userregex import PatternTimeout, UserRegex

from .log_filter import FilterProgress, FilterRow

__all__ = ["FilterView"]


@dataclass(slots=True)
class FilterView:
    """What is shown and how far the scan is."""

    pattern: UserRegex
    context: int
    rows: list[FilterRow | None] = field(default_factory=list)  # None: a separator
    matches: int = 0
    scanned: int = 0
    total: int = 0
    done: bool = False
    truncated: bool = False
    following: bool = False
    rotated: bool = False
    error: str = ""

    def add(self, p: FilterProgress) -> None:
        """Take the scan's latest progress (its new rows, a separator before each gap)."""
        for row in p.rows:
            if row.gap:
                self.rows.append(None)
            self.rows.append(row)
        self.matches, self.scanned, self.total, self.done, self.truncated = (
            p.matches, p.scanned, p.total, p.done, p.truncated)
        if p.done:  # a followed scan sends new rows between its looks: their flags stand
            self.following, self.rotated = p.following, p.rotated
        if p.error:
            self.error = "pattern took too long" if isinstance(p.error, PatternTimeout) else "the pattern failed"

    def status(self) -> str:
        """The pane's status line while it filters."""
        around = f" ±{self.context}" if self.context else ""
        percent = 100 * self.scanned // max(1, self.total)
        text = f"filter /{self.pattern.source}/{around}: {self.matches} matching line{'s' * (self.matches != 1)}"
        if self.error:
            text = f"filter /{self.pattern.source}/: {self.error}, stopped at {percent} %"
        elif self.following:  # at the end of the log so far (between two looks: new rows come in)
            text += " · following new lines"
        elif not self.done:
            text += f" · scanning {percent} %"
        elif self.truncated:
            text += " · first 200,000 rows only"
        elif self.rotated:
            text += " · stopped following: the log was rotated (& again to filter anew)"
        return text + " · & edits, Esc in the bar clears"
