"""hermes-procs as a plugin of the Hermes agent: every background process Hermes starts becomes a
durable job, and Hermes behaves as it does without it.

Installed next to Hermes (``pip install hermes-agent hermes-procs``), hermes-procs offers the
entry point ``hermes-procs`` in Hermes' group ``hermes_agent.plugins``; ``hermes plugins enable
hermes-procs`` turns it on (plugins are opt-in) and ``hermes plugins disable hermes-procs``
off again, from the next start of Hermes. Hermes loads enabled plugins whenever it starts
(the CLI, the TUI, the gateway, cron, the desktop app's gateway): before the gateway recovers
its background processes, and right after its tools are imported (``model_tools``).

:func:`register` then puts a :class:`~hermes_procs.core.agents.compat.HermesProcessRegistry` where
Hermes keeps its process registry (``tools.process_registry.process_registry``), and into every
module that had already imported Hermes' own instance (``tools.close_terminal_tool`` does, at
import). What the old registry held is taken over: its queued completions (async delegations it
restored), its pending watchers, the sinks a desktop gateway set; it keeps running what it may
have started, and what hermes-procs cannot run (sandbox backends other than local: see
docs/hermes.md). No file of Hermes is changed.

When hermes-procs cannot start (a state home it refuses, a broken install), Hermes keeps its own
registry and its log (``$HERMES_HOME/logs/agent.log`` and ``errors.log``) says why in one line;
when it starts, one line says where the jobs live.
"""

from __future__ import annotations

import importlib
import logging
import sys
import threading
from typing import Any

from ..supervisor.text import one_line

__all__ = ["active", "install", "register"]

log = logging.getLogger("hermes_procs.plugin")
_lock = threading.Lock()


def register(ctx: Any) -> None:
    """Hermes' plugin hook: swap the process registry (never raises: Hermes works on without us)."""
    try:
        adapter = install()
    except Exception as exc:  # noqa: BLE001 - any failure: Hermes keeps its own registry
        log.warning("hermes-procs is not active, Hermes keeps its own process registry: %s",
                    one_line(str(exc) or type(exc).__name__)[:300])
        return
    log.info("hermes-procs is active: background processes are durable jobs in %s (see `hermes-procs ls`)",
             adapter.registry.home)


def install() -> Any:
    """Put the adapter in place (once per process) and return it; raises when it cannot."""
    from .compat import HermesProcessRegistry

    with _lock:
        module = importlib.import_module("tools.process_registry")
        old = module.process_registry
        if isinstance(old, HermesProcessRegistry):
            return old  # discovery ran again (`discover_plugins(force=True)`)
        adapter = HermesProcessRegistry(restore=False)
        adapter.take_over(old)
        _replace(old, adapter)
        return adapter


def active() -> Any:
    """The adapter Hermes uses, or None (not enabled, not started, or Hermes not imported)."""
    from .compat import HermesProcessRegistry

    module = sys.modules.get("tools.process_registry")
    found = getattr(module, "process_registry", None)
    return found if isinstance(found, HermesProcessRegistry) else None


def _replace(old: Any, new: Any) -> int:
    """Bind every module-level name that holds `old` to `new`; returns how many."""
    count = 0
    for module in list(sys.modules.values()):
        try:
            names = [name for name, value in list(vars(module).items()) if value is old]
        except (TypeError, RuntimeError):  # no __dict__ (a stand-in), or one another thread is filling
            continue
        for name in names:
            setattr(module, name, new)
            count += 1
    return count
