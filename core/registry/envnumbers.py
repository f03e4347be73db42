"""Numbers from HERMES_PROCS_* environment settings: the one reader of them, and the ones it
could not use (a typo such as HERMES_PROCS_KILL_GRACE=3s falls back to the default, and the
CLI says so on stderr instead of ignoring it silently)."""

from __future__ import annotations

import math
import os
from _thread import allocate_lock  # threading's Lock; `threading` costs a CLI query ~1.5 ms

_LOCK = allocate_lock()
_UNUSABLE: dict[str, str] = {}  # name -> the one-line warning, in the order they were met


def env_number(name: str, default: float, lowest: float = 0.0, highest: float = math.inf,
               *, lowest_ok: bool = False) -> float:
    """The setting `name` as a number above `lowest` (or equal to it with `lowest_ok`), at most
    `highest` (larger values are taken as `highest`); `default` when unset, empty or unusable
    (then remembered for :func:`unusable_settings`)."""
    raw = os.environ.get(name, "")
    if not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if value > lowest or (lowest_ok and value == lowest):
        return min(value, highest)
    bound = f">= {lowest:g}" if lowest_ok else f"> {lowest:g}"
    with _LOCK:
        _UNUSABLE.setdefault(name, f"{name}={raw[:40]!r} is not a number {bound}: {default:.15g} is used")
    return default


def unusable_settings() -> list[str]:
    """One line for each setting read so far in this process that was not a usable number."""
    with _LOCK:
        return list(_UNUSABLE.values())


def forget_unusable() -> None:
    """Start a new count (the CLI, at the start of each command: a forked process inherits the
    settings its parent met)."""
    with _LOCK:
        _UNUSABLE.clear()
