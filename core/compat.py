"""A drop-in for the process registry that Hermes-style agents already call.

An agent written against Hermes' in-memory ``ProcessRegistry`` (``tools/process_registry.py``)
swaps it with one import, and from then on its background jobs are durable hermes-procs jobs
that a human sees (and can answer, stop, attach to) in the dashboard::

    from hermes_procs.core.compat import HermesProcessRegistry
    process_registry = HermesProcessRegistry()          # home: $HERMES_PROCS_HOME, ...

    session = process_registry.spawn_local("pytest -x", cwd="/repo", task_id="t1")
    session.id, session.pid                              # "proc_1a2b3c4d5e6f", 12345
    process_registry.poll(session.id)                    # {"status": "running", ...}
    process_registry.wait(session.id, timeout=60)
    event = process_registry.completion_queue.get()      # {"type": "completion", "exit_code": 0, ...}

Methods and what they return:

==========================================================  ===========================================
``spawn_local(command, cwd=None, task_id="",               a :class:`ProcessSession` (``.id``, ``.pid``,
session_key="", env_vars=None, use_pty=False, **extra)``    ``.command``, ``.cwd``, ``.task_id``,
                                                            ``.session_key``, ``.started_at``,
                                                            ``.notify_on_complete``,
                                                            ``.watch_patterns``, live
                                                            ``.exited``, ``.exit_code``,
                                                            ``.completion_reason``, ``.output_buffer``);
                                                            raises ``RuntimeError`` if it cannot start
``poll(id)``, ``read_log(id, offset=None, limit=200)``,     the contract dicts (see docs/api.md)
``wait(id, timeout=None, interrupt=None)``,
``kill_process(id, grace=None)``, ``write_stdin(id, data)``,
``submit_stdin(id, data="")``, ``close_stdin(id)``
``list_sessions(task_id=None, session_key=None)``           list of dicts, newest first
``has_active_processes(task_id=None)``                      bool: any running job (of that task)
``has_active_for_session(session_key)``                     bool: any running job of that session key
``kill_all(task_id=None)``                                  int: how many running jobs were killed
``get(id)``                                                 a :class:`ProcessSession` or None
``completion_queue``                                        ``queue.Queue`` of completion (and
                                                            watch_match) event dicts
==========================================================  ===========================================

``spawn_local`` sets ``notify_on_complete=True`` (pass ``notify_on_complete=False`` to opt out)
and accepts the registry's other spawn options as keywords (``name``, ``watch_patterns``,
``max_runtime``, ``rows``, ``cols``, ``notify_on_complete``).

The completion queue is fed by a daemon thread that drains the durable event log:

- by default under a private consumer name, and only with events of the jobs this adapter
  spawned: an agent process gets the completions of its own jobs, once;
- with ``HermesProcessRegistry(consumer="my-agent")``, every completion/watch_match event of the
  home under that durable name: exactly once across restarts of the agent, so a job that
  finished while the agent was down is still delivered when it comes back.

Results are the agent-facing view: secrets are masked as in the tool and the MCP server
(``redact=False`` or ``HERMES_PROCS_REDACT=0`` turns that off).
"""

from __future__ import annotations

import atexit
import os
import queue
import threading
import time
import uuid
import weakref
from typing import Any

from .model import parse_time
from .redact import redact_obj

__all__ = ["HermesProcessRegistry", "ProcessSession"]

_SPAWN_EXTRAS = ("name", "watch_patterns", "max_runtime", "rows", "cols", "notify_on_complete")


class ProcessSession:
    """What ``spawn_local`` and ``get`` return: the job's identity, plus live status attributes.

    ``exited``, ``exit_code``, ``completion_reason`` and ``output_buffer`` read the job's current
    state from the registry each time they are accessed.
    """

    def __init__(self, owner: "HermesProcessRegistry", info: dict) -> None:
        self._owner = owner
        self.id: str = info["session_id"]
        self.pid: int | None = info.get("pid")
        self.command: str = info.get("command", "")
        self.cwd: str | None = info.get("cwd")
        self.pty: bool = bool(info.get("pty", False))
        self.name: str = info.get("name") or ""
        self.task_id: str = info.get("task_id") or ""
        self.session_key: str = info.get("session_key") or ""
        self.notify_on_complete: bool = bool(info.get("notify_on_complete", False))
        self.watch_patterns: list[str] = list(info.get("watch_patterns") or [])
        started = info.get("started_at")
        self.started_at: float = parse_time(started, default=time.time())

    @property
    def session_id(self) -> str:
        return self.id

    def _poll(self) -> dict:
        return self._owner._registry.poll(self.id)

    @property
    def exited(self) -> bool:
        return self._poll().get("status") != "running"

    @property
    def exit_code(self) -> int | None:
        return self._poll().get("exit_code")

    @property
    def completion_reason(self) -> str | None:
        return self._poll().get("completion_reason")

    @property
    def output_buffer(self) -> str:
        out = self._owner._registry.read_log(self.id, limit=100_000)
        text = out.get("output", "") if isinstance(out, dict) else ""
        return self._owner._view(text)

    def __repr__(self) -> str:
        return f"ProcessSession(id={self.id!r}, pid={self.pid}, command={self.command[:60]!r})"


class HermesProcessRegistry:
    """Hermes-style method names over a durable :class:`~hermes_procs.core.ProcessRegistry`."""

    def __init__(self, home: str | os.PathLike | None = None, *, consumer: str | None = None,
                 redact: bool = True, poll_interval: float = 0.2, registry=None) -> None:
        if registry is None:
            from .registry import ProcessRegistry

            registry = ProcessRegistry(home=home)
        self._registry = registry
        self._redact = redact
        self._own_only = consumer is None
        self.consumer = consumer or f"compat-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self._poll_interval = poll_interval
        self._own: set[str] = set()
        self._lock = threading.Lock()
        self._queue: queue.Queue = queue.Queue()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        if self._own_only:  # remove the private cursor file at exit even if close() is never called
            ref = weakref.ref(self)
            atexit.register(lambda: (lambda obj: obj is not None and obj.close())(ref()))
        else:
            self._start_feeder()

    # ---- plumbing ------------------------------------------------------------------------
    @property
    def registry(self):
        """The underlying ProcessRegistry (raw, unmasked results)."""
        return self._registry

    def _view(self, obj: Any) -> Any:
        return redact_obj(obj) if self._redact else obj

    @property
    def completion_queue(self) -> queue.Queue:
        """Completion and watch_match events (dicts) of finished/matching jobs, oldest first."""
        self._start_feeder()
        return self._queue

    def _start_feeder(self) -> None:
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._stop.clear()
            self._thread = threading.Thread(target=self._feed, name=f"hermes-procs-{self.consumer}", daemon=True)
            self._thread.start()

    def _feed(self) -> None:
        while not self._stop.is_set():
            self.pump()
            self._stop.wait(self._poll_interval)

    def pump(self) -> int:
        """Move pending events into ``completion_queue`` now; returns how many were queued."""
        # under the lock: spawn_local records a new id before its completion can be filtered out
        with self._lock:
            try:
                events = self._registry.drain_events(self.consumer)
            except Exception:  # noqa: BLE001 - the feeder thread must survive anything
                return 0
            if not isinstance(events, list):
                return 0
            mine = [e for e in events if not self._own_only or e.get("session_id") in self._own]
        for event in mine:
            self._queue.put(self._view(event))
        return len(mine)

    def close(self) -> None:
        """Stop the feeder thread (the queue keeps what it already holds)."""
        self._stop.set()
        thread = self._thread
        if thread is not None:
            thread.join(timeout=2)
        if self._own_only:
            self._drop_cursor()

    def _drop_cursor(self) -> None:
        """The private cursor is of no use to anyone after us."""
        try:
            os.unlink(os.path.join(os.fspath(self._registry.home), "cursors", self.consumer))
        except (OSError, AttributeError, TypeError):
            pass

    def __enter__(self) -> "HermesProcessRegistry":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- spawning ------------------------------------------------------------------------
    def spawn_local(self, command: str, cwd: str | None = None, task_id: str = "", session_key: str = "",
                    env_vars: dict | None = None, use_pty: bool = False, **extra: Any) -> ProcessSession:
        """Start ``command`` as a durable job; returns its :class:`ProcessSession`.

        Raises ``RuntimeError`` with the registry's message when the job cannot start.
        """
        unknown = set(extra) - set(_SPAWN_EXTRAS)
        if unknown:
            raise TypeError(f"spawn_local() got unexpected keyword argument(s): {', '.join(sorted(unknown))}")
        kwargs = {"notify_on_complete": True, **extra}
        env = {str(k): str(v) for k, v in env_vars.items()} if env_vars else None
        # the feeder must know the id before the completion can arrive
        self._start_feeder()
        with self._lock:
            result = self._registry.spawn(command, cwd=cwd, env=env, pty=bool(use_pty), task_id=task_id or "",
                                          session_key=session_key or "", **kwargs)
            if isinstance(result, dict) and result.get("status") == "running":
                self._own.add(result["session_id"])
        if not isinstance(result, dict) or result.get("status") != "running":
            error = result.get("error") if isinstance(result, dict) else result
            raise RuntimeError(f"could not start {command!r}: {error}")
        info = {**result, "task_id": task_id or "", "session_key": session_key or "", "started_at": time.time(),
                "notify_on_complete": kwargs["notify_on_complete"], "watch_patterns": kwargs.get("watch_patterns")}
        return ProcessSession(self, info)

    # ---- queries -------------------------------------------------------------------------
    def get(self, session_id: str) -> ProcessSession | None:
        """The job as a :class:`ProcessSession`, or None when there is no such job."""
        info = self._registry.poll(session_id) if session_id else None
        if not isinstance(info, dict) or info.get("status") in ("not_found", "error"):
            return None
        return ProcessSession(self, info)

    def poll(self, session_id: str) -> dict:
        return self._view(self._registry.poll(session_id))

    def read_log(self, session_id: str, offset: int | None = None, limit: int = 200) -> dict:
        return self._view(self._registry.read_log(session_id, offset=offset, limit=limit))

    def wait(self, session_id: str, timeout: float | None = None, interrupt: threading.Event | None = None) -> dict:
        return self._view(self._registry.wait(session_id, timeout=timeout, interrupt=interrupt))

    def _rows(self, task_id: str | None = None, session_key: str | None = None) -> list[dict]:
        rows = self._registry.list(task_id=task_id, session_key=session_key)
        return rows if isinstance(rows, list) else []

    def list_sessions(self, task_id: str | None = None, session_key: str | None = None) -> list[dict]:
        return self._view(self._rows(task_id, session_key))

    def has_active_processes(self, task_id: str | None = None) -> bool:
        return any(r.get("status") == "running" for r in self._rows(task_id=task_id))

    def has_active_for_session(self, session_key: str) -> bool:
        return any(r.get("status") == "running" for r in self._rows(session_key=session_key))

    # ---- control -------------------------------------------------------------------------
    def kill_process(self, session_id: str, grace: float | None = None) -> dict:
        return self._view(self._registry.kill(session_id, grace=grace))

    def kill_all(self, task_id: str | None = None, grace: float | None = None) -> int:
        """Kill every running job (of ``task_id``); returns how many were killed."""
        killed = 0
        for row in self._rows(task_id=task_id):
            if row.get("status") == "running":
                if self._registry.kill(row["session_id"], grace=grace).get("status") == "killed":
                    killed += 1
        return killed

    def write_stdin(self, session_id: str, data: str) -> dict:
        return self._view(self._registry.write(session_id, data))

    def submit_stdin(self, session_id: str, data: str = "") -> dict:
        return self._view(self._registry.submit(session_id, data))

    def close_stdin(self, session_id: str) -> dict:
        return self._view(self._registry.close_stdin(session_id))
