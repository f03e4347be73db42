"""`Registry`: what every registry answers, each method marked as reading jobs or changing them.

Four classes implement it: `ProcessRegistry` (the jobs of this machine), `RemoteRegistry` (of
one remote host, core/remote/client.py), `HostSet` (of every host at once, core/remote/hosts.py)
and the dashboard's `ReadOnlyRegistry` (tui/readonly.py). The CLI and the dashboard hold a
`Registry`; mypy checks each implementation against it (ProcessRegistry, RemoteRegistry and
HostSet name it as their base, so a method missing from one is an error).

The marks are the capabilities: `@reads` (looks at jobs, or moves only the caller's own event
cursor) or `@changes` (starts, feeds, signals, kills or removes jobs, or changes how one runs).
A read-only view lets through what is marked `reads` and refuses everything else (`access`), so
a method added here with `@changes`, or without a mark, is refused there without anyone
remembering to list it. Every result is a JSON-able dict (or a list of them) of docs/api.md;
bad input is an error dict, never an exception.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional, Protocol, TypeVar

__all__ = ["ACCESS", "HostsView", "Interrupt", "Registry", "Result", "Rows", "Stream", "access", "changes",
           "marked", "reads"]

ACCESS = "__registry_access__"  # the attribute a mark sets on a method: "reads" or "changes"
F = TypeVar("F", bound=Callable[..., Any])
Result = dict[str, Any]
Rows = builtins.list[Result]  # list results; a failure is still one error dict (`Rows | Result`)


def reads(method: F) -> F:
    """Mark `method` as reading jobs only: a read-only view lets it through."""
    setattr(method, ACCESS, "reads")
    return method


def changes(method: F) -> F:
    """Mark `method` as changing jobs: a read-only view refuses it."""
    setattr(method, ACCESS, "changes")
    return method


class Interrupt(Protocol):
    """What a wait's `interrupt` is: a threading.Event, or anything with is_set()."""

    def is_set(self) -> bool: ...


class Stream(Protocol):
    """A live attach (`registry.stream`): output bytes from absolute `offset` on."""

    offset: int
    pty: bool

    def fileno(self) -> int: ...

    def read(self, timeout: Optional[float] = None) -> Optional[bytes]:
        """Output bytes; None when nothing came within `timeout`; b"" at the end of the stream."""
        ...

    def send(self, data: bytes) -> None: ...

    def close(self) -> None: ...


class Registry(Protocol):
    """The jobs of a state home (docs/api.md describes every method)."""

    @property
    def home(self) -> os.PathLike[str] | str:
        """The state home (on a remote host: `host:path`)."""
        ...

    # ---- reading
    @reads
    def list(self, task_id: str | None = None, session_key: str | None = None,
             only: Any = None) -> Rows | Result: ...

    @reads
    def poll(self, session_id: str) -> Result: ...

    @reads
    def get(self, session_id: str) -> Result: ...

    @reads
    def read_log(self, session_id: str, offset: int | None = None, limit: int = 200,
                 since: float | str | None = None, max_chars: int | None = None) -> Result: ...

    @reads
    def log_bytes(self, session_id: str, start: int | None = None, end: int | None = None,
                  max_bytes: int = 4 << 20, times: bool = False) -> Result: ...

    @reads
    def inputs(self, session_id: str, limit: int = 20) -> Rows | Result: ...

    @reads
    def wait(self, session_id: str, timeout: float | None = None, interrupt: Interrupt | None = None,
             until: str = "exit") -> Result: ...

    @reads
    def wait_any(self, session_ids: builtins.list[str] | tuple[str, ...], timeout: float | None = None,
                 interrupt: Interrupt | None = None) -> Result: ...

    @reads
    def screen(self, session_id: str, raw: bool = False) -> Result: ...

    @reads
    def search(self, session_id: str | None = None, pattern: str | None = None, context: int = 2,
               limit: int = 50, task_id: str | None = None, max_chars: int | None = None) -> Result: ...

    @reads
    def tree(self, session_id: str) -> Result: ...

    @reads
    def job_dir(self, session_id: str) -> Path:
        """The job's folder on this machine (a remote job's: its local mirror, HostSet only)."""
        ...

    @reads
    def log_files(self, session_id: str) -> builtins.list[Path]: ...

    @reads
    def stacks(self, name: str | None = None) -> Rows | Result:
        """Every stack (or the one named) with its state and its jobs' (docs/stacks.md)."""
        ...

    @reads  # moves only the caller's own cursor
    def drain_events(self, consumer: str = "default", all_types: bool = False, only_new: bool = False,
                     limit: int = 1000) -> Rows | Result: ...

    @reads  # deletes only the caller's own cursor
    def forget_consumer(self, consumer: str) -> Result: ...

    # ---- changing
    @changes
    def spawn(self, command: str, *, cwd: str | os.PathLike[str] | None = None, env: dict[str, str] | None = None,
              pty: bool = False, name: str | None = None, task_id: str = "", session_key: str = "",
              notify_on_complete: bool = False, watch_patterns: builtins.list[str] | None = None, rows: int = 30,
              cols: int = 120, max_runtime: float | None = None, quiet_after: float | None = None,
              rerun_of: str | None = None, shell: builtins.list[str] | None = None,
              environ: dict[str, str] | None = None, reuse: bool = False, port: int | None = None,
              lease: int | None = None, stack: str | None = None, restarts: int = 0) -> Result: ...

    @changes
    def exec(self, command: str, yield_ms: float = 10_000, **spawn_options: Any) -> Result: ...

    @changes
    def restart(self, session_id: str) -> Result: ...

    @changes
    def write(self, session_id: str, data: str | bytes, source: str = "agent",
              yield_ms: float | None = None) -> Result: ...

    @changes
    def submit(self, session_id: str, data: str | bytes = "", source: str = "agent",
               yield_ms: float | None = None) -> Result: ...

    @changes
    def close_stdin(self, session_id: str) -> Result: ...

    @changes
    def resize(self, session_id: str, rows: int, cols: int) -> Result: ...

    @changes
    def signal(self, session_id: str, sig: str | int) -> Result: ...

    @changes
    def signal_process(self, session_id: str, pid: int, sig: str | int, start_ticks: int | None = None) -> Result: ...

    @changes
    def set_watch_patterns(self, session_id: str, patterns: builtins.list[str]) -> Result: ...

    @changes
    def kill(self, session_id: str, grace: float | None = None) -> Result: ...

    @changes
    def pin(self, session_id: str) -> Result: ...

    @changes
    def unpin(self, session_id: str) -> Result: ...

    @changes
    def prune(self, keep_days: float | None = None, keep_count: int | None = None) -> Result: ...

    @changes
    def up(self, path: str | None = None, name: str | None = None, wait: bool = False,
           timeout: float | None = None) -> Result:
        """Bring a stack up from its file, under the stack's own supervisor (docs/stacks.md)."""
        ...

    @changes
    def down(self, stack: str | None = None, path: str | None = None) -> Result: ...

    @changes
    def restart_stack(self, stack: str, job: str | None = None) -> Result: ...

    @changes  # with input=True it types into the job; a read-only view answers input=False itself
    def stream(self, session_id: str, input: bool = False, source: str = "human") -> Stream: ...


class HostsView(Registry, Protocol):
    """A registry of several hosts (HostSet): the hosts' states and names besides the jobs."""

    @reads
    def host_states(self) -> builtins.list[Result]: ...

    @reads
    def host_name(self, label: str) -> str: ...


def access(name: str) -> str | None:
    """How method `name` of a registry treats jobs: "reads", "changes", or None when no interface
    declares it with a mark (a read-only view refuses it then too)."""
    for interface in (Registry, HostsView):
        method = getattr(interface, name, None)
        mark = getattr(getattr(method, "fget", method), ACCESS, None)
        if mark is not None:
            return str(mark)
    return None


def marked(mark: str) -> frozenset[str]:
    """The names of the interface methods with `mark` ("reads" or "changes")."""
    names = {name for interface in (Registry, HostsView) for name in dir(interface)}
    return frozenset(name for name in names if not name.startswith("_") and access(name) == mark)
