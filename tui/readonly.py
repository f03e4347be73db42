"""The registry as a read-only dashboard sees it (`hermes-procs web --read-only`).

Every method that changes a job (kill, signal, spawn, input, resize, attach with input, prune)
answers ``{"status": "error", "error": "read-only"}`` without touching the job; reads (list,
poll, logs) pass through.  The dashboard runs on the server, so a modified browser client
cannot get around it: the refusal happens in the process that owns the registry.
"""

from __future__ import annotations

from typing import Any

from hermes_procs.core import ProcessRegistry

READ_ONLY_ERROR = {"status": "error", "error": "read-only"}
READ_ONLY_TOAST = "This dashboard is read-only: it shows jobs, it does not change them or write files."
_REFUSED = frozenset({"spawn", "write", "submit", "close_stdin", "resize", "signal", "signal_process", "kill", "prune",
                      "restart", "rerun", "remove", "up", "down", "restart_stack"})


def refused(widget: Any, registry: Any) -> bool:
    """True, with a toast on `widget`, when `registry` (or the app's `files`) is read-only: an
    action that would change a job or write a file stops there (the registry or the write would
    refuse it anyway; the toast says why nothing happens)."""
    if getattr(registry, "read_only", False) is not True:
        return False
    widget.notify(READ_ONLY_TOAST, title="Read-only", severity="warning", timeout=3, markup=False)
    return True


class ReadOnlyError(PermissionError):
    """Raised by ``stream(input=True)``: the one method that returns no result dict."""


class ReadOnlyRegistry:
    """Wraps a ProcessRegistry; refuses the methods in ``_REFUSED``."""

    read_only = True

    def __init__(self, registry: ProcessRegistry | Any) -> None:
        self._registry = registry

    def __getattr__(self, name: str) -> Any:
        if name in _REFUSED:
            return lambda *args, **kwargs: dict(READ_ONLY_ERROR)
        return getattr(self._registry, name)

    def stream(self, session_id: str, input: bool = False, source: str = "human") -> Any:
        if input:
            raise ReadOnlyError("read-only")
        return self._registry.stream(session_id, input=False, source=source)
