"""The key map, generated from the widgets' ``BINDINGS``: the help screen (``?``) and the README's
keys table come from the same list, so neither can drift from what the keys do.

Every documented binding carries its help text in ``tooltip`` (``description`` is the short
footer label).  A class's ``HELP_TITLE`` names its section; bindings in a row with the same
tooltip are shown as one entry (``↑ / ↓``).  ``python -m hermes_procs.tui.screenshots --keys``
prints the README table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Label, Static


class _App(Protocol):
    """The app whose actions the command palette lists (app.HermesApp)."""

    @property
    def main(self) -> Any: ...  # its MainScreen (main_screen.py), which holds the log pane

__all__ = ["OWNERS", "HelpEntry", "HelpScreen", "document", "help_entries", "key_label", "markdown_table",
           "palette_entries"]

_NAMES = {
    "question_mark": "?", "slash": "/", "escape": "Esc", "enter": "Enter", "tab": "Tab",
    "up": "↑", "down": "↓", "left": "←", "right": "→", "pageup": "PgUp", "pagedown": "PgDn",
    "home": "Home", "end": "End", "right_square_bracket": "]", "space": "Space", "ampersand": "&",
}


def key_label(key: str) -> str:
    """``ctrl+f`` -> ``Ctrl-F``, ``shift+f3`` -> ``Shift-F3``, ``question_mark`` -> ``?``."""
    *mods, base = key.split("+")
    name = _NAMES.get(base, base.upper() if base.startswith("f") and base[1:].isdigit() else base)
    if mods and len(name) == 1:
        name = name.upper()
    return "-".join([m.capitalize() for m in mods] + [name])


@dataclass(frozen=True)
class HelpEntry:
    section: str
    keys: tuple[str, ...]  # as shown: ("a", "Ctrl-T")
    does: str
    ids: tuple[str, ...] = ()  # the binding ids: the names the config's [keys] table uses

    @property
    def shown(self) -> str:
        return " ".join(self.keys)


# The classes whose bindings make the key map, in the order of its sections: the app lists
# them (app.py, `document`), since it is the module that imports them all.
OWNERS: list[type] = []


def document(*classes: type) -> None:
    """Make `classes` (in this order) the owners of the key map's bindings."""
    OWNERS[:] = classes


def help_entries(keymap: dict[str, str] | None = None) -> list[HelpEntry]:
    """Every binding with a tooltip, in section order (``keymap``: the user's keys by id)."""
    keymap = keymap or {}
    entries: list[HelpEntry] = []
    for cls in OWNERS:
        section = getattr(cls, "HELP_TITLE", cls.__name__)
        for binding in cls.__dict__.get("BINDINGS", []):
            if not isinstance(binding, Binding) or not binding.tooltip:
                continue
            key = keymap.get(binding.id or "", binding.key)
            keys = ((binding.key_display,) if binding.key_display and key == binding.key
                    else tuple(key_label(k.strip()) for k in key.split(",")))
            last = entries[-1] if entries else None
            ids = (binding.id,) if binding.id else ()
            if last is not None and last.section == section and last.does == binding.tooltip:
                entries[-1] = HelpEntry(section, last.keys + keys, last.does, last.ids + ids)
            else:
                entries.append(HelpEntry(section, keys, binding.tooltip, ids))
    return entries


def palette_entries(app: _App) -> list[tuple[str, str, str, Widget]]:
    """(title, help, action, target) for every action of the main screen and the log pane,
    for the command palette; the target is the widget the action runs on."""
    out: list[tuple[str, str, str, Widget]] = []
    screens = [cls for cls in type(app.main).__mro__ if cls.__module__.startswith(__package__ or "tui")]
    targets = [*((app.main, cls) for cls in screens), (app.main.log_pane, type(app.main.log_pane))]
    for target, cls in targets:
        for binding in cls.__dict__.get("BINDINGS", []):
            if binding.tooltip and binding.action not in ("escape", "cancel_selection"):
                out.append((f"{binding.description} ({key_label(binding.key.split(',')[0])})",
                            binding.tooltip, binding.action, target))
    return out


def markdown_table() -> str:
    """The README's keys table."""
    lines = ["| where | key | does | id for `[keys]` |", "|---|---|---|---|"]
    for e in help_entries():
        keys = " ".join(f"`{k}`" for k in e.keys)
        ids = " ".join(f"`{i}`" for i in e.ids)
        lines.append(f"| {e.section} | {keys} | {e.does} | {ids} |")
    return "\n".join(lines)


class HelpScreen(ModalScreen[None]):
    """The full key map (two columns on wide screens)."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; background: $background 60%; }
    HelpScreen > Vertical {
        width: 90; max-width: 98%; height: auto; max-height: 96%;
        border: thick $primary 80%; background: $surface; padding: 0 1;
    }
    HelpScreen > Vertical.wide { width: 150; }
    HelpScreen VerticalScroll { height: auto; max-height: 100%; }
    HelpScreen .title { text-style: bold; width: 100%; content-align: center middle; }
    """
    BINDINGS = [Binding("escape,q,question_mark", "close", "Close")]

    @staticmethod
    def _sections(entries: list[HelpEntry]) -> list[Group]:
        """One titled key table per section; the title is a line of its own (in the keys
        column it was cut to the keys' width: "Log pane (l,...")."""
        sections: list[Group] = []
        width = max(len(x.shown) for x in entries)
        table, current = Table.grid(), None
        for e in entries:
            if e.section != current:
                current = e.section
                table = Table.grid(padding=(0, 1))
                table.add_column(style="bold cyan", no_wrap=True, width=width)
                table.add_column()
                sections.append(Group(Text(e.section, style="bold underline"), table))
            table.add_row(Text(e.shown), Text(e.does))
        return sections

    def compose(self) -> ComposeResult:
        config = getattr(self.app, "config", None)  # any app may show the help (tests, screenshots)
        tables = self._sections(help_entries(config.keys if config else None))
        wide = self.app.size.width >= 150
        with Vertical(classes="wide" if wide else ""):
            yield Label("hermes-procs dashboard — keys  (Esc closes)", classes="title")
            with VerticalScroll():
                if wide:
                    half = (len(tables) + 1) // 2
                    grid = Table.grid(padding=(0, 3))
                    grid.add_column(width=70)
                    grid.add_column(width=70)
                    grid.add_row(Group(*tables[:half]), Group(*tables[half:]))
                    yield Static(grid)
                else:
                    yield Static(Group(*tables))
                yield Static(Text(
                    "Closing the dashboard never stops a job: every job has its own supervisor. "
                    "Marks in the table: P = runs in a PTY, ? = waiting for input. "
                    "The mouse works everywhere (click rows, buttons, scroll the log). "
                    "Ctrl-P opens the command palette.", style="dim"))

    def on_click(self, event) -> None:
        if event.widget is self:  # a click outside the dialog closes it
            self.dismiss(None)

    def action_close(self) -> None:
        self.dismiss(None)


