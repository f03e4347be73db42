"""Where a key goes when keys come faster than the dashboard handles them (a paste, ``tmux
send-keys``, a fast typist).

Textual sends each key to the widget that has the focus when the key is *read*, and runs a key
binding only once the key has bubbled back up to the app.  So the keys behind a binding that
moves the focus were already on their way to the old widget: ``ikyoto`` typed at once sent the
``k`` to the jobs table (``i`` had not yet focused the input bar), which asked "Kill this job?".
Three rules make a burst behave like the same keys typed slowly:

* :class:`KeyRouter` runs a key's binding at once, in order, when the focused widget would not
  take the key itself (``check_consume_key``: an input takes printable keys, the terminal pane
  every key), before the next key is routed;
* an action that moves the focus does it at once (:func:`focus_now`, not ``Widget.focus``,
  which waits for the next turn of the event loop); while a screen has no focused widget yet
  (the dashboard starting, a dialog a binding just opened), the keys wait until it has;
* a destructive confirmation (:class:`TypeAheadGuard`) ignores the keys typed before it was on
  screen and those right behind them, so no typed text answers it; it is answered by a key that
  is not a letter (Enter on its button).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from textual import events
from textual._time import get_time
from textual.widget import Widget

if TYPE_CHECKING:
    from textual.app import App
    from textual.screen import Screen

__all__ = ["KeyRouter", "TypeAheadGuard", "focus_now"]

HOLD_POLL = 0.01  # seconds between looks at a newly opened screen's focus
HOLD_MAX = 200  # looks before the held keys go to the screen anyway (one without focusable widgets)


def focus_now(widget: Widget) -> None:
    """Give `widget` the focus now: the next key already goes to it."""
    widget.screen.set_focus(widget)
    widget.refresh()


class TypeAheadGuard:
    """Mixin of a screen that typed text must not answer (a destructive confirmation): it drops
    the keys read before it was on screen (:meth:`arm`, from its ``on_mount``) and every key
    read less than ``QUIET`` seconds after the previous dropped one (a burst that keeps
    coming), so only a key pressed after a pause, with the dialog in view, reaches it; the
    keys that cancel (``SAFE_KEYS``) always do."""

    QUIET = 0.3  # seconds; a paste or send-keys burst is microseconds apart, a reader takes longer
    SAFE_KEYS = ("escape", "n")  # cancelling is never dropped: it cannot hurt

    _quiet_until = 0.0  # monotonic (Textual's clock, as Key.time): keys read before it are dropped

    def arm(self) -> None:
        """The screen is on screen from now: keys read before, and right behind them, are dropped."""
        self._quiet_until = get_time() + self.QUIET

    def accepts(self, key: events.Key) -> bool:
        if key.key in self.SAFE_KEYS:
            return True
        if key.time < self._quiet_until:
            self._quiet_until = max(self._quiet_until, key.time + self.QUIET)
            return False
        return True


class KeyRouter:
    """The app's key routing (see the module docstring): ``HermesApp.on_event`` gives it every
    key read from the terminal instead of Textual's own routing."""

    def __init__(self, app: App) -> None:
        self.app = app
        self.held: deque[events.Key] | None = None  # keys waiting for a screen to take the focus
        self._unfocused: Screen | None = None  # a screen that took no focus in time: keys go to it

    async def route(self, key: events.Key) -> None:
        """What Textual does with a key (priority bindings, then the focused widget, whose
        bindings run when the key bubbles back up), except that a key the focused widget does
        not take runs its binding now, and keys wait while a screen (the dashboard starting, a
        dialog just opened) has not yet focused its first widget."""
        if self.held is not None:
            self.held.append(key)
            return
        app = self.app
        screen = app.screen
        app.app_focus = True
        if isinstance(screen, TypeAheadGuard) and not screen.accepts(key):
            return
        if await app._check_bindings(key.key, priority=True):
            self._settle(screen)
            return
        focused = app.focused
        if focused is None:
            if screen is self._unfocused:
                screen._forward_event(key)
            else:
                self._hold(screen, key)
            return
        if not focused.check_consume_key(key.key, key.character) and await app._check_bindings(key.key):
            self._settle(screen)
            return
        focused._forward_event(key)

    def _settle(self, before: Screen) -> None:
        """After a binding ran: when it opened another screen, hold the next keys until that
        screen has focused its first widget (its on_mount, one turn of the event loop later)."""
        screen = self.app.screen
        if screen is not before and screen.focused is None:
            self._hold(screen)

    def _hold(self, screen: Screen, *keys: events.Key) -> None:
        """Keep `keys` and the next ones until `screen` has a focused widget (looked at every
        HOLD_POLL s; after HOLD_MAX looks the keys go to the screen itself, as Textual sends them)."""
        self.held = deque(keys)
        looks = 0

        def look() -> None:
            nonlocal looks
            looks += 1
            if screen.focused is None and screen.is_attached and looks < HOLD_MAX:
                self.app.set_timer(HOLD_POLL, look)
                return
            if screen.focused is None:
                self._unfocused = screen
            self.app.call_later(self._release)

        self.app.set_timer(HOLD_POLL, look)

    async def _release(self) -> None:
        """Route the held keys in order (one of them may open another screen: the rest waits again)."""
        held, self.held = self.held or deque(), None
        while held:
            if self.held is not None:
                self.held.extend(held)
                return
            await self.route(held.popleft())
