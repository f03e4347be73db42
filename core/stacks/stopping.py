"""Stopping a stack's jobs in reverse dependency order: a job is killed only once every job
that depends on it has stopped; jobs with no such relation stop at the same time (a thread
each), each with its own ``stop_grace``. Used by the stack supervisor (``down``, ``restart``)
and by a client when no supervisor runs."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from .model import StackSpec

if TYPE_CHECKING:
    from collections.abc import Callable

    from .core_api import ProcessRegistry


def stop_in_order(registry: ProcessRegistry, spec: StackSpec, sessions: dict[str, str],
                  names: list[str] | None = None,
                  stopped: Callable[[str], None] | None = None) -> dict[str, dict[str, Any]]:
    """Kill the running jobs of `sessions` (name -> session id) among `names` (default: all),
    dependents first; `stopped(name)` is called (from that job's thread) as each one ends.
    Returns name -> the kill result."""
    chosen = set(spec.jobs if names is None else names)
    done = {name: threading.Event() for name in spec.jobs}
    results: dict[str, dict[str, Any]] = {}

    def stop(name: str) -> None:
        try:
            for dependent in spec.dependents(name):
                done[dependent].wait()
            sid = sessions.get(name)
            if sid and name in chosen:
                result = registry.kill(sid, grace=spec.jobs[name].stop_grace)
                results[name] = result if isinstance(result, dict) else {"status": "error", "error": str(result)}
                if stopped is not None and results[name].get("status") != "error":
                    stopped(name)
        finally:
            done[name].set()

    threads = [threading.Thread(target=stop, args=(name,), name=f"stop-{name}", daemon=True) for name in spec.jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results
