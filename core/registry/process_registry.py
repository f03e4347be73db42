"""`ProcessRegistry`: the public Python API (docs/api.md), the jobs of a state home on this machine.

It is put together from its verb families, one module each, on `RegistryBase` (base.py: the
state, job lookup, the supervisor's socket, errors as dicts):

    spawn.py         spawn, restart
    observe.py       poll, get, list, read_log, log_bytes, screen, search, inputs, tree
    wait.py          wait, wait_any
    yielding.py      exec (and the yield of write and submit)
    control.py       write, submit, close_stdin, resize, signal, signal_process,
                     set_watch_patterns, stream, kill, pin, unpin
    consumers.py     drain_events, forget_consumer
    housekeeping.py  prune, and the automatic prune

Each method is declared, with its mark (reads or changes jobs), in the `Registry` interface
(interface.py), which RemoteRegistry and HostSet (core/remote/) implement too.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, cast

from .consumers import Consumers
from .control import Controlling
from .housekeeping import Housekeeping
from .observe import Observing
from .spawn import Spawning

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["ProcessRegistry", "plug_remote"]


# Who answers `ProcessRegistry(host=URL)` for another machine: core/remote/ (RemoteRegistry),
# plugged in by hermes_procs.core's __init__, so that this room never imports the one above it.
_remote: Callable[[str, str | os.PathLike[str] | None], object] | None = None


def plug_remote(factory: Callable[[str, str | os.PathLike[str] | None], object]) -> None:
    """Set what `ProcessRegistry(host=URL)` returns for a remote host (hermes_procs.core does)."""
    global _remote
    _remote = factory


class ProcessRegistry(Spawning, Observing, Controlling, Consumers, Housekeeping):
    """Durable background jobs under a state home; docs/api.md describes every method."""

    def __new__(cls, home: str | os.PathLike[str] | None = None, host: str | None = None) -> ProcessRegistry:
        """`host` (or $HERMES_PROCS_HOST): the jobs of a remote host (core/remote/client.py);
        None, "" or "local": this machine."""
        host = os.environ.get("HERMES_PROCS_HOST") if host is None else host
        if cls is ProcessRegistry and host not in (None, "", "local"):
            if _remote is None:
                raise ValueError(f"remote hosts are not available here: {host}")
            # a stand-in, not a subclass: it answers every ProcessRegistry method, so callers
            # hold it as one
            return cast("ProcessRegistry", _remote(host, home))
        return super().__new__(cls)
