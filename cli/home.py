"""The registry a command works on: `registry(home)` over a --home (or $HERMES_PROCS_HOST's
remote host), `existing_registry(home)` for the commands that only work on jobs already there,
and `check_home` for the commands that open the home in another process.
Typer-free: the hot queries (quick.py) open their registry here too."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Optional

from .output import CliError

if TYPE_CHECKING:
    from hermes_procs.core.registry.interface import Registry


def check_home(home: Optional[str]) -> None:
    """This machine's state home is usable (created 0700 if missing), else the CliError that
    `registry` gives: for the commands that open it in another process (dashboard, web)."""
    from hermes_procs.core.registry.paths import HomeError, ensure_private_dir, resolve_home

    _not_empty(home)
    try:
        ensure_private_dir(resolve_home(home))
    except (HomeError, OSError) as exc:
        raise _home_error(home, exc) from exc


def _not_empty(home: Optional[str]) -> None:
    """`--home ""` (an unset variable in a script) is an error, not the default home."""
    if home == "":
        raise CliError("--home is empty: give a folder, or leave --home out for the default home")


def missing_home(home: Optional[str]) -> Optional[str]:
    """The state home named by --home or $HERMES_PROCS_HOME when it does not exist (None when it
    does, for the default home, and for a remote host): a query need not create it."""
    from hermes_procs.core.registry.paths import HomeError, resolve_home

    _not_empty(home)
    remote = os.environ.get("HERMES_PROCS_HOST") not in (None, "", "local")
    if remote or not (home or os.environ.get("HERMES_PROCS_HOME")):
        return None
    try:
        path = resolve_home(home)
    except HomeError:
        return None  # the registry says what is wrong with it
    if os.path.lexists(path):
        return None
    parent = path.parent
    while not os.path.lexists(parent):
        parent = parent.parent
    return str(path) if parent.is_dir() else None  # under a file: the registry's error says so


def existing_registry(home: Optional[str]) -> Registry:
    """`registry(home)` for a command on the jobs already there (poll, log, kill, prune, ...): a
    --home that does not exist is a one-line error, not a new empty folder (a typo in it looked
    like every job gone)."""
    missing = missing_home(home)
    if missing:
        raise CliError(f"no state home at {missing}: no job has run there (created by the first run)")
    return registry(home)


def _home_error(home: Optional[str], exc: Exception) -> CliError:
    named = home or ("($HERMES_PROCS_HOME)" if os.environ.get("HERMES_PROCS_HOME") else
                     "($HERMES_HOME/procs)" if os.environ.get("HERMES_HOME") else "(default: ~/.hermes/procs)")
    return CliError(f"cannot open state home {named}: {exc}")


def registry(home: Optional[str]) -> Registry:
    """The ProcessRegistry over `home`; a CliError when the home cannot be used."""
    from hermes_procs.core import ProcessRegistry

    _not_empty(home)
    remote = os.environ.get("HERMES_PROCS_HOST") not in (None, "", "local")  # set by --host
    try:
        return ProcessRegistry(home=home)
    except Exception as exc:  # noqa: BLE001 - bad home, permissions, ...: one line for the user
        if remote and isinstance(exc, ValueError):  # a bad host URL or unknown host name
            raise CliError(str(exc)) from exc
        raise _home_error(home, exc) from exc
