"""Alerts that reach a human in another window: the terminal bell and a desktop notification.

The dashboard toasts when a job starts waiting for input or ends non-zero; a toast is only seen
by someone looking at the dashboard.  :func:`alert` also writes, through the app's driver (as
Textual's ``App.bell`` does), what the ``[notify]`` settings ask for (:class:`NotifySettings`,
read by :mod:`.config`):

* ``bell``: BEL (``\\a``): the terminal beeps, flashes or marks its tab; tmux marks the window.
* ``desktop = "osc9"``: ``ESC ] 9 ; message BEL``, a desktop notification in iTerm2, WezTerm,
  kitty, foot, Ghostty and Windows Terminal; ``"osc777"``: ``ESC ] 777 ; notify ; title ; body
  BEL`` (VTE terminals: GNOME Terminal, Tilix; also foot, WezTerm, Ghostty).  A terminal that
  knows neither ignores the sequence.  Inside tmux it is wrapped for passthrough (tmux passes it
  on with ``set -g allow-passthrough on``).

Nothing of the job's text reaches the terminal raw: control characters are dropped first.  A
driver that cannot write (headless, closing) never takes the dashboard down.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from hermes_procs.core.supervisor.text import safe_line

__all__ = ["DESKTOP_MODES", "KINDS", "NotifySettings", "alert", "clean", "desktop_sequence"]

KINDS = ("input", "failure")  # a job waits for input; a job ends non-zero (killed, lost included)
DESKTOP_MODES = ("osc9", "osc777", "off")


@dataclass(frozen=True)
class NotifySettings:
    """The ``[notify]`` table: which events alert, and how (toasts are always shown)."""

    on: frozenset[str] = field(default_factory=lambda: frozenset(KINDS))
    bell: bool = True
    desktop: str = "osc9"


def clean(text: str, limit: int = 200) -> str:
    """One line of printable text, at most ``limit`` characters (no escape can get through)."""
    return safe_line(text)[:limit]


def desktop_sequence(mode: str, title: str, body: str, in_tmux: bool = False) -> str:
    """The OSC 9 / OSC 777 notification for ``mode`` ("" for "off")."""
    title, body = clean(title, 80), clean(body)
    if mode == "osc9":
        seq = f"\x1b]9;{title}: {body}\x07" if body else f"\x1b]9;{title}\x07"
    elif mode == "osc777":
        seq = f"\x1b]777;notify;{title.replace(';', ',')};{body}\x07"
    else:
        return ""
    if in_tmux:  # DCS passthrough: every ESC inside doubled
        seq = "\x1bPtmux;" + seq.replace("\x1b", "\x1b\x1b") + "\x1b\\"
    return seq


def alert(app: Any, settings: NotifySettings, kind: str, title: str, body: str) -> str:
    """Ring and/or notify for an event of ``kind`` as ``settings`` say; returns what was written
    ("" when nothing: the kind is off, or the driver cannot write)."""
    if kind not in settings.on:
        return ""
    out = "\a" if settings.bell else ""
    out += desktop_sequence(settings.desktop, title, body, in_tmux=bool(os.environ.get("TMUX")))
    driver = getattr(app, "_driver", None)  # how App.bell writes; None before start / after exit
    if not out or driver is None:
        return ""
    try:
        driver.write(out)
        driver.flush()
    except Exception:  # a driver leaving application mode, a web client gone
        return ""
    return out
