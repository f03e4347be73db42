"""The stack calls of `ProcessRegistry` (`up`, `down`, `restart_stack`, `stacks`): a project's jobs
with dependencies, probes and restart policies. The work is core/stacks/'s (a room above this
one), plugged in by hermes_procs.core's __init__ (`plug_stacks`), so that this room never
imports the one above it; without it (a remote host that got only the shipped code) each call
is a one-line error.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from . import base
from .base import RegistryBase
from .interface import Result, Rows
from .paths import IdError


class StacksApi(Protocol):
    """What core/stacks/api.py answers (each never raises: an error dict instead)."""

    def up(self, registry: Any, path: str | None = None, name: str | None = None, *, wait: bool = False,
           timeout: float | None = None) -> dict[str, Any]: ...

    def down(self, registry: Any, stack: str | None = None, path: str | None = None) -> dict[str, Any]: ...

    def restart(self, registry: Any, stack: str, job: str | None = None) -> dict[str, Any]: ...

    def stacks(self, registry: Any, name: str | None = None) -> builtins.list[dict[str, Any]] | dict[str, Any]: ...

    def job_id(self, home: Path, name: str) -> str: ...

    def prune(self, home: Path, too_old: float) -> builtins.list[str]: ...


_load: Callable[[], StacksApi] | None = None
MISSING = "stacks are not available here (hermes-procs is not installed on this host)"


def plug_stacks(load: Callable[[], StacksApi]) -> None:
    """Set who does the stack calls: `load()` returns it when a stack call is first made
    (hermes_procs.core plugs core/stacks/api.py, imported only then). `STACK/JOB` then names
    a stack's job wherever an id is taken (base.named_job)."""
    global _load
    _load = load
    base.named_job = _named_job


def _named_job(home: Path, name: str) -> str:
    try:
        return _api().job_id(home, name)
    except LookupError:
        raise IdError("error", f"Invalid session id {name[:60]!r}: stacks are not available here") from None


def _api() -> StacksApi:
    if _load is None:
        raise LookupError(MISSING)
    try:
        return _load()
    except ImportError:  # the code shipped to a host has no core/stacks/
        raise LookupError(MISSING) from None


def prune_stacks(home: Path, too_old: float) -> builtins.list[str]:
    """Remove the folders of the stacks that are down and have not changed since `too_old`
    (prune's retention); their names ([] where stacks are not available). A home without
    stacks does not load their code."""
    if not (home / "stacks").is_dir():  # core/stacks/store.py's STACKS
        return []
    try:
        return _api().prune(home, too_old)
    except LookupError:
        return []


class Stacking(RegistryBase):
    """up, down, restart_stack, stacks (docs/stacks.md)."""

    def up(self, path: str | None = None, name: str | None = None, wait: bool = False,
           timeout: float | None = None) -> dict[str, Any]:
        """Bring a stack up from its file (None: the first stack file in the current folder)."""
        try:
            return _api().up(self, path, name, wait=wait, timeout=timeout)
        except LookupError as exc:
            return {"status": "error", "error": str(exc)}

    def down(self, stack: str | None = None, path: str | None = None) -> dict[str, Any]:
        """Stop a stack's jobs, dependents first, and its supervisor."""
        try:
            return _api().down(self, stack, path)
        except LookupError as exc:
            return {"status": "error", "error": str(exc)}

    def restart_stack(self, stack: str, job: str | None = None) -> dict[str, Any]:
        """Restart a whole stack in dependency order, or one job of it."""
        try:
            return _api().restart(self, stack, job)
        except LookupError as exc:
            return {"status": "error", "error": str(exc)}

    def stacks(self, name: str | None = None) -> Rows | Result:
        """Every stack of the home (or the one named) with its state and its jobs' states."""
        try:
            return _api().stacks(self, name)
        except LookupError as exc:
            return {"status": "error", "error": str(exc)}
