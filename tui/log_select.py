"""The log pane's line selection (``v``, or a mouse drag): an anchor line and a moving end."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LineSelection"]


@dataclass(slots=True)
class LineSelection:
    anchor: int | None = None  # where the selection started (None: no selection)
    cursor: int = 0  # the other end, moved by the keys or the mouse
    dragging: bool = False  # a mouse button is down on the pane

    @property
    def active(self) -> bool:
        return self.anchor is not None

    def start(self, line: int) -> None:
        self.anchor = self.cursor = line

    def move_to(self, line: int, total: int) -> None:
        self.cursor = max(0, min(total - 1, line))

    def clear(self) -> None:
        self.anchor = None

    def lines(self) -> tuple[int, int] | None:
        """The selected lines (first, last), inclusive."""
        if self.anchor is None:
            return None
        return min(self.anchor, self.cursor), max(self.anchor, self.cursor)
