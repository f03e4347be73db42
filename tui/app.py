"""The hermes-procs dashboard: watch, read, type into and kill every job of a state home.

The app embeds :class:`hermes_procs.core.ProcessRegistry` (no server).  It is thin: it owns the
registry and the app-wide keys, and shows a :class:`~.main_screen.MainScreen`, which holds the
layout, the state and every action on jobs.

Closing the dashboard never stops a job: every job belongs to its own supervisor.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable
from functools import partial
from typing import Any

from textual import events
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from hermes_procs.core.registry.interface import Registry
from hermes_procs.core.remote.hosts import dashboard_registry
from hermes_procs.core.supervisor.text import safe_line, safe_text

from .config import Config, load_config, remember_theme
from .files import Files
from .find import FilterBar, FindBox, JobSearch
from .help import HelpScreen, document, palette_entries
from .input_bar import InputBar
from .jobs_table import JobsTable
from .keyroute import KeyRouter
from .log_pane import LogPane
from .main_screen import MainScreen
from .proc_tree import TreeScreen
from .readonly import ReadOnlyRegistry
from .stack_actions import StackActions
from .terminal import TerminalPane

__all__ = ["HermesApp", "run"]

_GC_SETTLED = False


class HermesApp(App):
    """The dashboard application: one :class:`MainScreen` plus dialogs."""

    TITLE = "hermes-procs"
    HELP_TITLE = "App"
    BINDINGS = [
        Binding("q", "quit", "Quit", tooltip="quit the dashboard (jobs keep running)", id="quit"),
        Binding("question_mark", "help", "Help", key_display="?", tooltip="this key map", id="help"),
    ]

    def __init__(self, registry: Registry | None = None, *, home: str | None = None,
                 sample_interval: float = 1.0, home_label: str | None = None,
                 config: Config | None = None, read_only: bool = False) -> None:
        """`read_only` (`hermes-procs web --read-only`): the registry itself refuses every change
        to a job (tui/readonly.py) and `files` every file write on this machine (tui/files.py);
        the screen's actions only say so early with a toast."""
        super().__init__()
        registry = registry if registry is not None else dashboard_registry(home)
        self.registry = ReadOnlyRegistry(registry) if read_only else registry
        self.files = Files(read_only)
        self.config = config if config is not None else load_config()
        self.main = MainScreen(self.registry, sample_interval=sample_interval, home_label=home_label)
        self.keys = KeyRouter(self)

    async def on_event(self, event: events.Event) -> None:
        """Keys read from the terminal go through the KeyRouter (tui/keyroute.py): a burst of
        keys goes where each key's focus went, and typed text never answers a confirmation."""
        if isinstance(event, events.Key) and not event.is_forwarded:
            await self.keys.route(event)
            return
        await super().on_event(event)

    def get_default_screen(self) -> MainScreen:
        return self.main

    def on_mount(self) -> None:
        cfg = self.config
        if cfg.theme:
            if cfg.theme in self.available_themes:
                self.theme = cfg.theme
            else:
                cfg.problems.append(f"unknown theme {cfg.theme!r}")
        if cfg.keys:
            self.set_keymap(cfg.keys)
        for problem in cfg.problems:
            self.notify(problem, title="Settings", severity="warning", timeout=10, markup=False)
        self.call_after_refresh(self._settle_gc)
        self.call_after_refresh(self._remember_themes)

    def _remember_themes(self) -> None:
        """From now on (the configured theme is applied), a theme the user picks is kept."""
        path = self.config.path
        if path is not None and self.is_running:  # not when the app closes before its first refresh
            self.theme_changed_signal.subscribe(self, lambda theme: remember_theme(path, theme.name, self.files))

    def notify(self, message: str, *, title: str = "", **kwargs: Any) -> None:
        """Every toast (of any widget or screen) goes through the one sanitiser: a job's name,
        command or error text in it is shown with its escapes visible, never sent; and as
        text, not Textual markup (a name such as ``build [/]`` is shown, it does not crash the
        dashboard or style the toast), unless the caller asks for markup."""
        kwargs.setdefault("markup", False)
        super().notify(safe_text(message), title=safe_line(title), **kwargs)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """The command palette (Ctrl-P): Textual's own commands (themes, keys, quit...) and
        every action of the dashboard, generated from the same bindings as the help."""
        for command in super().get_system_commands(screen):
            if not (self.is_web and command.title == "Screenshot"):  # its download is outside the web
                yield command                                         # server's secret path: the browser has its own
        for title, help_text, action, target in palette_entries(self):
            yield SystemCommand(title, help_text, partial(self.run_action, action, target))

    def _settle_gc(self) -> None:
        """Move everything that exists once the first screen is up (modules, classes, the
        widget tree: ~80,000 objects) out of the cyclic GC's reach.  Every full collection
        walked all of them: ~50 ms every few seconds, 120-220 ms on a loaded machine, and a key
        pressed then waited for it.  They are still freed by reference counting."""
        global _GC_SETTLED
        if not _GC_SETTLED:  # once per process (tests run many apps in one)
            _GC_SETTLED = True
            gc.collect()
            gc.freeze()

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())


# the key map (help.py), section by section: whose bindings, in which order
document(JobsTable, MainScreen, StackActions, JobSearch, LogPane, FindBox, FilterBar, InputBar, TerminalPane,
         TreeScreen, HermesApp)


def run(home: str | None = None, demo: bool = False, hosts: list[str] | None = None,
        read_only: bool = False) -> int:
    """Open the dashboard on ``home`` (None: the default state home) and the remote ``hosts``
    (with the configured and remembered ones: core/remote/hosts.py); with ``demo`` start the sample
    jobs first; ``read_only`` refuses every change to a job.  Returns 0.  Jobs keep running
    after the dashboard closes."""
    registry = dashboard_registry(home, hosts)
    if demo:
        from .demo import start_demo

        for result in start_demo(registry):
            if result.get("status") != "running":
                print(f"hermes-procs: a sample job failed to start: {result.get('error')}")
    HermesApp(registry, read_only=read_only).run()
    return 0


if __name__ == "__main__":  # pragma: no cover
    import sys

    run(sys.argv[1] if len(sys.argv) > 1 else None, demo="--demo" in sys.argv)
