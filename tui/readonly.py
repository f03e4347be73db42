"""The registry as a read-only dashboard sees it (`hermes-procs web --read-only`).

What it lets through is derived from the marks of the `Registry` interface
(core/registry/interface.py): a method marked `reads` passes; every other method, one marked
`changes` and one no interface marks alike, answers ``{"status": "error", "error": "read-only"}``
without touching the job. So a method added to the registry later is refused here until it is
declared reading. ``stream`` is answered here: without input it is a read, with input it is
refused. The dashboard runs on the server, so a modified browser client cannot get around it:
the refusal happens in the process that owns the registry.

It is a proxy (``__getattr__``), so mypy takes it for any `Registry`; tests/test_web_readonly.py
checks every interface method through it.
"""

from __future__ import annotations

from typing import Any

from hermes_procs.core.registry.interface import Registry, Result, Stream, access

READ_ONLY_ERROR = {"status": "error", "error": "read-only"}
READ_ONLY_TOAST = "This dashboard is read-only: it shows jobs, it does not change them or write files."


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


def _refuse(*args: Any, **kwargs: Any) -> Result:
    return dict(READ_ONLY_ERROR)


class ReadOnlyRegistry:
    """Wraps a registry; lets through only the methods the interface marks as reading."""

    read_only = True

    def __init__(self, registry: Registry) -> None:
        self._registry = registry

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._registry, name)
        if callable(attr) and access(name) != "reads":
            return _refuse
        return attr

    def stream(self, session_id: str, input: bool = False, source: str = "human") -> Stream:
        if input:
            raise ReadOnlyError("read-only")
        return self._registry.stream(session_id, input=False, source=source)
