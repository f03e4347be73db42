"""A drop-in for the process registry of the Hermes agent (``tools/process_registry.py``).

Hermes swaps it in with one line (docs/hermes.md); from then on its background processes are
durable hermes-procs jobs that a human sees (and can answer, stop, attach to) in the dashboard::

    from hermes_procs.core.compat import HermesProcessRegistry
    process_registry = HermesProcessRegistry()          # home: $HERMES_PROCS_HOME, ...

    session = process_registry.spawn_local("pytest -x", cwd="/repo", task_id="t1")
    session.notify_on_complete = True                    # attributes set after spawn take effect
    process_registry.poll(session.id)                    # {"status": "running", ...}
    process_registry.wait(session.id, timeout=60)        # {"status": "exited", "exit_code": 0, ...}
    for event, text in process_registry.drain_notifications():
        print(text)                                      # "[IMPORTANT: Background process ...]"

Scope: an adapter instance owns the jobs it started (and those it re-adopts with
``recover_from_checkpoint`` after a restart); ``kill_all``, ``list_sessions`` and the
``has_active_*`` queries see only those, so an agent's ``/stop`` never kills the human's dev
server. ``poll``/``read_log``/``wait``/``kill_process``/``get`` take any job id of the home. The plain
:class:`~hermes_procs.core.ProcessRegistry` and the dashboard see every job.

Events: ``completion_queue`` is fed from the durable event log (a private consumer that starts
at the log's end; ``consumer="name"`` keeps a durable cursor across restarts and also passes the
completion/watch_match events of jobs this instance does not own). Every event carries
``session_id``, ``session_key``, ``task_id``, ``owner_task_id``, ``command`` and the watcher
routing fields (``platform``, ``chat_id``, ``user_id``, ``user_name``, ``thread_id``,
``message_id``). Results are masked for secrets as in the tool and MCP server (``redact=False``
or ``HERMES_PROCS_REDACT=0`` turns that off). docs/hermes.md lists every upstream name.
"""

from __future__ import annotations

import atexit
import importlib
import importlib.util
import logging
import os
import queue
import re
import sys
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from . import logstore, text
from .compat_checkpoint import Checkpoint
from .compat_session import PERSISTED, ROUTE_KEYS, ProcessSession, format_process_notification
from .paths import IdError, resolve_id
from .redact import redact_obj
from .secretwords import is_secret_name

if TYPE_CHECKING:
    from .registry import Interrupt, ProcessRegistry

T = TypeVar("T")

__all__ = ["HermesProcessRegistry", "ProcessSession", "format_process_notification"]

log = logging.getLogger(__name__)

FORCE_PREFIX = "_HERMES_FORCE_"  # env_vars["_HERMES_FORCE_X"] sets X even when X looks secret
COMPLETION_OUTPUT_CHARS = 2000
_SPAWN_EXTRAS = ("name", "watch_patterns", "max_runtime", "rows", "cols", "notify_on_complete")
_LIFECYCLE_SOURCES = frozenset({"kill_all", "gateway_turn_timeout", "agent_close"})
_SHOWING = re.compile(r"lines (\d+)-(\d+) of")
_NO_HERMES_INTERRUPT = object()
_hermes_interrupt: Any = None


class _Flag:
    """``is_set()`` over a callable, for ProcessRegistry.wait's interrupt argument."""

    def __init__(self, check: Callable[[], Any]) -> None:
        self._check = check

    def is_set(self) -> bool:
        try:
            return bool(self._check())
        except Exception:  # noqa: BLE001 - a broken check never aborts the wait
            return False


def _hermes_is_interrupted() -> Callable[[], Any] | None:
    """Hermes's per-thread ``tools.interrupt.is_interrupted``, when Hermes is importable."""
    global _hermes_interrupt
    if _hermes_interrupt is None:
        found: Any = _NO_HERMES_INTERRUPT
        try:
            if "tools.interrupt" in sys.modules or importlib.util.find_spec("tools.interrupt") is not None:
                check = getattr(importlib.import_module("tools.interrupt"), "is_interrupted", None)
                found = check if callable(check) else _NO_HERMES_INTERRUPT
        except Exception:  # noqa: BLE001 - no Hermes here (or a different "tools" package)
            pass
        _hermes_interrupt = found
    return None if _hermes_interrupt is _NO_HERMES_INTERRUPT else _hermes_interrupt


def _not_found(session_id: Any) -> dict[str, Any]:
    return {"status": "not_found", "error": f"No process with ID {session_id}"}


class HermesProcessRegistry:
    """Hermes' ``ProcessRegistry`` names over a durable :class:`~hermes_procs.core.ProcessRegistry`."""

    def __init__(self, home: str | os.PathLike[str] | None = None, *, consumer: str | None = None,
                 redact: bool = True, poll_interval: float = 0.2, registry: ProcessRegistry | None = None) -> None:
        if registry is None:
            from .registry import ProcessRegistry

            # this machine's jobs, even when $HERMES_PROCS_HOST names another one for the CLI:
            # the adapter reads job folders directly (remote hosts: the tool's and MCP's `host`)
            registry = ProcessRegistry(home=home, host="local")
        self._registry = registry
        self._redact = redact
        self._own_only = consumer is None
        instance = uuid.uuid4().hex[:8]
        self.consumer = consumer or f"compat-{os.getpid()}-{instance}"
        self._poll_interval = poll_interval
        self._sessions: dict[str, ProcessSession] = {}  # every session handed out: get() returns the same
        self._own: set[str] = set()
        self._completion_consumed: set[str] = set()
        self._poll_observed: set[str] = set()
        self._tails: dict[str, tuple[tuple[int, int, int, int, bool], str]] = {}
        self._errors_logged: set[str] = set()
        self.pending_watchers: list[dict[str, Any]] = []
        self.on_output = None  # upstream's desktop sinks; live output is `hermes-procs attach` here
        self.on_close = None
        self._checkpoint = Checkpoint(registry.home, instance)
        self._lock = threading.RLock()
        self._queue: queue.Queue[dict[str, Any]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.pump()  # places a new consumer's cursor at the end of the log: nothing old is replayed
        atexit.register(_close_at_exit, weakref.ref(self))
        if not self._own_only:
            self._start_feeder()

    # ---- plumbing ------------------------------------------------------------------------
    @property
    def registry(self) -> ProcessRegistry:
        """The underlying ProcessRegistry (raw, unmasked results, every job of the home)."""
        return self._registry

    def _view(self, obj: T) -> T:
        """`obj` with every string in it masked (when redacting): the same shape."""
        return cast("T", redact_obj(obj)) if self._redact else obj

    def _log_once(self, what: str, exc: BaseException | str) -> None:
        key = f"{what}: {exc}"
        if key not in self._errors_logged:
            self._errors_logged.add(key)
            log.warning("hermes-procs adapter: %s failed: %s", what, exc,
                        exc_info=exc if isinstance(exc, BaseException) else None)

    def _resolve(self, session_id: Any) -> str | None:
        """The full id of a job of this home, or None (unknown, malformed or ambiguous)."""
        try:
            return resolve_id(self._registry.jobs_dir, session_id)
        except IdError:
            return None

    @property
    def completion_queue(self) -> queue.Queue[dict[str, Any]]:
        """Events (dicts) of finished/matching jobs, oldest first: completion, watch_match, watch_disabled."""
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

    def close(self) -> None:
        """Stop the feeder thread and checkpoint the jobs still running (they stay recoverable)."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=2)
        self._save_checkpoint()
        if self._own_only:
            try:
                self._registry.forget_consumer(self.consumer)
            except Exception as exc:  # noqa: BLE001
                self._log_once("forgetting the event cursor", exc)

    def __enter__(self) -> HermesProcessRegistry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- events --------------------------------------------------------------------------
    def pump(self) -> int:
        """Move pending events into ``completion_queue`` now; returns how many were queued."""
        with self._lock:
            try:
                events = self._registry.drain_events(self.consumer, all_types=True, only_new=True)
            except Exception as exc:  # noqa: BLE001 - the feeder thread must survive, but say why once
                self._log_once("reading the event log", exc)
                return 0
            if not isinstance(events, list):
                why = events.get("error") if isinstance(events, dict) else events
                self._log_once("reading the event log", str(why))
                return 0
            out: list[dict[str, Any]] = []
            for event in events:
                try:
                    out.extend(self._translate(event))
                except Exception as exc:  # noqa: BLE001
                    self._log_once(f"delivering a {event.get('type')} event", exc)
        for event in out:
            self._queue.put(self._view(event))
        return len(out)

    def _translate(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        """The adapter's events for one event of the log (none, or one)."""
        sid, kind = str(event.get("session_id") or ""), event.get("type")
        session = self._sessions.get(sid) if sid in self._own else None
        if session is None:  # not ours: only a named consumer passes these on, as they are
            return [event] if not self._own_only and kind in ("completion", "watch_match") else []
        if kind == "watch_match" and event.get("notice"):
            session.notify_on_complete = True  # like upstream: one completion instead of more matches
            return [{**self._event_base(session), "type": "watch_disabled", "suppressed": 0,
                     "message": (f"Watch patterns disabled for process {sid} — {event['notice']}. Falling back to "
                                 "notify_on_complete semantics; you'll get exactly one notification when the "
                                 "process exits.")}]
        if kind == "watch_match":
            session._watch_hits += 1
            return [{**self._event_base(session), "type": "watch_match", "pattern": event.get("pattern", ""),
                     "output": event.get("output", ""), "suppressed": event.get("suppressed", 0)}]
        wanted = session.notify_on_complete and (kind == "completion" if session._registry_notify else kind == "exited")
        if not wanted:
            return []
        output = self._output_tail(sid, session.completion_output_chars or COMPLETION_OUTPUT_CHARS, masked=False)
        return [{**self._event_base(session), "type": "completion", "exit_code": event.get("exit_code"),
                 "completion_reason": event.get("completion_reason") or "exited",
                 "termination_source": session.termination_source, "output": output,
                 "started_at": session.started_at,
                 **({"handoff_note": session.handoff_note} if session.handoff_note else {})}]

    @staticmethod
    def _event_base(session: ProcessSession) -> dict[str, Any]:
        return {"session_id": session.id, "session_key": session.session_key, "task_id": session.task_id,
                "owner_task_id": session.owner_task_id, "command": session.command,
                **{key: getattr(session, f"watcher_{key}") for key in ROUTE_KEYS}}

    def is_completion_consumed(self, session_id: str) -> bool:
        """True when the agent already has the result in hand (read_log to the end, wait or kill)."""
        return (self._resolve(session_id) or str(session_id)) in self._completion_consumed

    def drain_notifications(self, session_key: str = "", owns_event: Callable[[dict[str, Any]], Any] | None = None, *,
                            skip_poll_observed: bool = True) -> list[tuple[dict[str, Any], str]]:
        """Pop every pending event and return ``(event, text)`` pairs; events of other sessions go back.

        An event carrying a ``session_key`` is taken only with proof it is ours: ``owns_event(event)``
        returns true (an exception counts as no), or it equals ``session_key``. Without either, every
        event is taken. Completions the agent already has (consumed; or seen by ``poll`` unless
        ``skip_poll_observed=False``) are dropped.
        """
        self.pump()
        results, requeue = [], []
        while True:
            try:
                event = self._queue.get_nowait()
            except queue.Empty:
                break
            if not _owns(event, session_key, owns_event):
                requeue.append(event)
                continue
            sid = event.get("session_id", "")
            if event.get("type", "completion") == "completion" and (
                    sid in self._completion_consumed or (skip_poll_observed and sid in self._poll_observed)):
                continue
            message = format_process_notification(event)
            if message:
                results.append((event, message))
        for event in requeue:
            self._queue.put(event)
        return results

    # ---- spawning ------------------------------------------------------------------------
    def spawn_local(self, command: str, cwd: str | None = None, task_id: str = "", session_key: str = "",
                    env_vars: dict[str, Any] | None = None, use_pty: bool = False, owner_task_id: str = "",
                    persist_on_release: bool = False, **extra: Any) -> ProcessSession:
        """Start ``command`` as a durable job owned by this adapter; returns its :class:`ProcessSession`.

        Raises ``RuntimeError`` with the registry's message when the job cannot start.
        """
        unknown = set(extra) - set(_SPAWN_EXTRAS)
        if unknown:
            raise TypeError(f"spawn_local() got unexpected keyword argument(s): {', '.join(sorted(unknown))}")
        notify = bool(extra.pop("notify_on_complete", False))
        try:
            env = _child_overrides(env_vars)
        except ValueError as exc:
            raise RuntimeError(f"could not start {command!r}: {exc}") from None
        with self._lock:  # the id is known before its events can be drained
            result = self._registry.spawn(command, cwd=cwd, env=env, pty=bool(use_pty),
                                          task_id=task_id or "", session_key=session_key or "",
                                          notify_on_complete=notify, **extra)
            if not isinstance(result, dict) or result.get("status") != "running":
                error = result.get("error") if isinstance(result, dict) else result
                raise RuntimeError(f"could not start {command!r}: {error}")
            info = {**result, "task_id": task_id or "", "owner_task_id": owner_task_id or task_id or "",
                    "session_key": session_key or "", "started_at": time.time(), "notify_on_complete": notify,
                    "_registry_notify": notify, "watch_patterns": extra.get("watch_patterns"),
                    "persist_on_release": persist_on_release}
            session = self._adopt(ProcessSession(self, info))
        self._save_checkpoint()
        return session

    def _adopt(self, session: ProcessSession) -> ProcessSession:
        self._sessions[session.id] = session
        self._own.add(session.id)
        return session

    def spawn_via_env(self, env: Any, command: str, cwd: str | None = None, task_id: str = "",
                      session_key: str = "", timeout: int = 10, owner_task_id: str = "",
                      persist_on_release: bool = False) -> ProcessSession:
        """Hermes' non-local backends: a local environment runs the job here; a sandbox (docker,
        ssh, modal, ...) gets a session that failed to start, saying why (jobs run on this host)."""
        if type(env).__name__ == "LocalEnvironment":
            return self.spawn_local(command, cwd=cwd or getattr(env, "cwd", None), task_id=task_id,
                                    session_key=session_key, owner_task_id=owner_task_id,
                                    persist_on_release=persist_on_release)
        message = (f"Failed to start: hermes-procs runs background jobs on this host only; the "
                   f"{type(env).__name__} backend is not supported (use the local terminal backend)")
        info = {"session_id": f"proc_{uuid.uuid4().hex[:12]}", "command": command, "cwd": cwd, "task_id": task_id,
                "owner_task_id": owner_task_id or task_id, "session_key": session_key,
                "termination_source": "failed_start", "persist_on_release": persist_on_release}
        return ProcessSession(None, info, outcome={"exit_code": -1, "completion_reason": "failed_start"},
                              output=message)

    # ---- settings after spawn and the checkpoint -----------------------------------------
    def _apply_watch_patterns(self, session: ProcessSession, patterns: list[str]) -> None:
        if session._outcome is not None or session.exited:
            return
        result = self._registry.set_watch_patterns(session.id, patterns)
        if result.get("status") not in ("ok", "already_exited"):
            raise ValueError(result.get("error", "could not set watch_patterns"))

    def _session_changed(self, session: ProcessSession) -> None:
        if session.id in self._own:
            self._save_checkpoint()

    def _save_checkpoint(self) -> None:
        with self._lock:
            entries = [{"session_id": s.id, **{k: getattr(s, k) for k in PERSISTED},
                        "registry_notify": s._registry_notify}
                       for sid, s in self._sessions.items() if sid in self._own and not s.exited]
        try:
            self._checkpoint.save(entries)
        except OSError as exc:
            self._log_once("writing the checkpoint", exc)

    def recover_from_checkpoint(self) -> int:
        """Re-adopt the still-running jobs of adapters that are gone (this agent before a restart).

        Returns how many were adopted; they come back with their settings (``notify_on_complete``,
        ``watch_patterns``, ``watcher_*``) and ``detached=True``; their output is all there. Watched
        sessions (``watcher_interval`` > 0) are queued on ``pending_watchers`` for the gateway.
        """
        adopted = 0
        for path, entries in self._checkpoint.orphaned():
            for entry in entries:
                sid = self._resolve(entry["session_id"])
                if sid is None or sid in self._own:
                    continue
                info = self._registry.get(sid)
                if info.get("status") != "running":
                    continue
                fields = {k: entry[k] for k in PERSISTED if k in entry}
                session = ProcessSession(self, {**info, **info.get("meta", {}), **fields, "detached": True,
                                                "started_at": info.get("meta", {}).get("created_at"),
                                                "_registry_notify": entry.get("registry_notify", False)})
                with self._lock:
                    self._adopt(session)
                adopted += 1
                if session.watcher_interval > 0:
                    self.pending_watchers.append({
                        "session_id": session.id, "check_interval": session.watcher_interval,
                        "session_key": session.session_key,
                        **{key: getattr(session, f"watcher_{key}") for key in ROUTE_KEYS},
                        "notify_on_complete": session.notify_on_complete,
                        "parent_session_id": session.parent_session_id})
            path.unlink(missing_ok=True)
        self._save_checkpoint()
        return adopted

    # ---- queries -------------------------------------------------------------------------
    def get(self, session_id: str) -> ProcessSession | None:
        """The job (full id or unique prefix) as a :class:`ProcessSession` (the same object each
        time), or None when no job of the home matches."""
        sid = self._resolve(session_id) if isinstance(session_id, str) and session_id else None
        if sid is None:
            return None
        with self._lock:
            session = self._sessions.get(sid)
            if session is None:
                info = self._registry.get(sid)
                if info.get("status") not in ("running", "exited"):
                    return None
                meta = info.get("meta", {})
                session = ProcessSession(self, {**info, **meta, "started_at": meta.get("created_at"),
                                                "_registry_notify": meta.get("notify_on_complete", False)})
                self._sessions[sid] = session
            return session

    def _owned(self) -> list[ProcessSession]:
        with self._lock:
            return [s for sid, s in self._sessions.items() if sid in self._own]

    def _output_tail(self, session_id: str, chars: int, masked: bool = True) -> str:
        """The last ``chars`` characters of the job's output; re-read only when the log changed."""
        try:
            jobdir = self._registry.job_dir(session_id)
            st = os.stat(jobdir / "output.log")
            stamp = (st.st_ino, st.st_size, st.st_mtime_ns, chars, masked)
        except (OSError, IdError):
            return ""
        cached = self._tails.get(session_id)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        tail = text.last_chars(logstore.tail_bytes(jobdir, chars * 4 + 4096), chars)
        if masked:
            tail = self._view(tail)
            self._tails[session_id] = (stamp, tail)
        return tail

    def poll(self, session_id: str) -> dict[str, Any]:
        """Status and the last 1000 characters of output."""
        sid = self._resolve(session_id)
        if sid is None:
            return _not_found(session_id)
        result = self._registry.poll(sid)
        if result.get("status") not in ("running", "exited"):
            return self._view(result)
        result["uptime_seconds"] = int(result.get("uptime_seconds") or 0)
        session = self._sessions.get(sid)
        if result["status"] == "exited":
            result["termination_source"] = session.termination_source if session else ""
            self._poll_observed.add(sid)
        if session is not None and session.detached:
            result["detached"] = True
        return self._view(result)

    def read_log(self, session_id: str, offset: int | None = None, limit: int = 200) -> dict[str, Any]:
        """Lines of output: ``offset=None`` the last ``limit`` lines, ``offset=N`` lines N.. (0 = first)."""
        sid = self._resolve(session_id)
        if sid is None:
            return _not_found(session_id)
        result = self._registry.read_log(sid, offset=offset, limit=limit)
        if result.get("status") not in ("running", "exited"):
            return self._view(result)
        span = _SHOWING.match(result.get("showing", ""))
        shown = int(span.group(2)) - int(span.group(1)) + 1 if span else 0
        session = self.get(sid)
        result.update(command=session.command if session else "", showing=f"{shown} lines",
                      range=result.get("showing", ""))
        at_end = offset is None or (span is not None and int(span.group(2)) + 1 >= result["total_lines"])
        if result["status"] == "exited" and at_end:
            self._consume(sid, session)
        return self._view(result)

    def _consume(self, sid: str, session: ProcessSession | None) -> None:
        """The agent has this exited job's result in hand; a notify_on_complete job keeps its
        notification (it is the user's too). Pending events are applied first: a watch cap may
        have turned notify_on_complete on."""
        self.pump()
        if not (session and session.notify_on_complete):
            self._completion_consumed.add(sid)

    def wait(self, session_id: str, timeout: float | None = None, interrupt: Any = None) -> dict[str, Any]:
        """Block until the job exits, ``timeout`` passes or the wait is interrupted.

        ``interrupt``: a ``threading.Event`` (or anything with ``is_set()``) or a callable returning
        true to stop; by default Hermes' own per-thread flag (``tools.interrupt``) when Hermes is here.
        """
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                    or timeout <= 0):
            return {"status": "error", "error": f"timeout must be positive (got {timeout})"}
        sid = self._resolve(session_id)
        if sid is None:
            return _not_found(session_id)
        session = self.get(sid)
        command = session.command if session else ""
        result = self._registry.wait(sid, timeout=timeout, interrupt=_interrupt_flag(interrupt))
        status = result.get("status")
        if status == "exited":
            result.update(command=command, termination_source=session.termination_source if session else "")
            self._consume(sid, session)
        elif status == "interrupted":
            result.update(command=command, output=result.get("output", "")[-1000:],
                          note="User sent a new message -- wait interrupted")
        elif status == "timeout":
            hint = (" notify_on_complete is set: you will be notified on exit — do more work instead of waiting "
                    "again." if session and session.notify_on_complete else
                    " Poll again later or use notify_on_complete=true next time for automatic notification.")
            result.update(command=command, output=result.get("output", "")[-1000:], process_running=True,
                          timeout_note=f"{result.get('timeout_note', '')}. The process is still running; this is "
                                       f"not an error.{hint}")
        return self._view(result)

    def _rows(self) -> list[dict[str, Any]]:
        rows = self._registry.list()
        return [r for r in rows if r.get("session_id") in self._own] if isinstance(rows, list) else []

    def list_sessions(self, task_id: str | None = None, session_key: str | None = None, *,
                      include_retained: bool = False) -> list[dict[str, Any]]:
        """This adapter's jobs, newest first; with ``task_id`` and/or ``session_key``, those of the
        task OR of the session key (a process of another task under the same key is flagged
        ``session_scoped``). Empty/None filters mean all of them."""
        entries = []
        for row in self._rows():
            session = self._sessions[row["session_id"]]
            if (task_id or session_key) and not ((task_id and session.owner_task_id == task_id) or
                                                  (session_key and session.session_key == session_key)):
                continue
            entries.append(self._list_entry(row, session, task_id, session_key))
        return self._view(entries)

    @staticmethod
    def _list_entry(row: dict[str, Any], s: ProcessSession, task_id: str | None,
                    session_key: str | None) -> dict[str, Any]:
        entry = {**row, "owner_task_id": s.owner_task_id,
                 "started_at": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(s.started_at)),
                 "uptime_seconds": int(row.get("uptime_seconds") or 0)}
        if task_id and session_key and s.owner_task_id != task_id and s.session_key == session_key:
            entry["session_scoped"] = True
        if s.watch_patterns:
            entry.update(watch_patterns=list(s.watch_patterns), watch_hit=s._watch_hits > 0)
        if s.notify_on_complete:
            entry["notify_on_complete"] = True
        if s.persist_on_release:
            entry["persist_on_release"] = True
        if s.detached:
            entry["detached"] = True
        if row.get("status") == "exited":
            entry["termination_source"] = s.termination_source
        return entry

    def _running(self, predicate: Callable[[ProcessSession], bool] = lambda s: True) -> list[ProcessSession]:
        return [s for s in self._owned() if predicate(s) and not s.exited]

    def has_active_processes(self, task_id: str | None = None) -> bool:
        """Any running job of this adapter (of ``task_id``)."""
        return bool(self._running(lambda s: task_id is None or s.owner_task_id == task_id))

    def has_active_for_session(self, session_key: str, max_active_age: float | None = None) -> bool:
        """Any running job of this session key; jobs older than ``max_active_age`` seconds don't count."""
        now = time.time()
        return bool(self._running(lambda s: s.session_key == session_key and (
            max_active_age is None or now - s.started_at < max_active_age)))

    def has_any_active(self) -> bool:
        return bool(self._running())

    def count_running(self) -> int:
        return len(self._running())

    def snapshot_running_ids(self, task_id: str) -> frozenset[str]:
        return frozenset(s.id for s in self._running(lambda s: s.owner_task_id == task_id))

    def running_owned_by(self, owner_task_id: str) -> list[ProcessSession]:
        return self._running(lambda s: s.owner_task_id == owner_task_id)

    def unread_completions_owned_by(self, owner_task_id: str) -> list[ProcessSession]:
        """Exited notify_on_complete jobs of ``owner_task_id`` whose result nobody read."""
        return [s for s in self._owned() if s.owner_task_id == owner_task_id and s.notify_on_complete and s.exited
                and s.exit_code is not None and s.id not in self._completion_consumed | self._poll_observed]

    def is_session_waiting(self, session_id: str) -> bool:
        """Whether a goal loop should stay parked on this job: it runs and, if it has watch
        patterns, none has matched yet."""
        session = self.get(session_id)
        if session is None or session.exited:
            return False
        self.pump()
        return not (session.watch_patterns and session._watch_hits > 0)

    def wait_for_pending_completions(self, task_id: str | None = None, *, timeout: float | None = None,
                                     poll_interval: float = 1.0) -> dict[str, Any]:
        """Linger (one-shot exit) until this adapter's running notify_on_complete jobs finish or
        ``timeout`` (default 600 s) passes: ``{"waited", "completed", "timed_out"}`` id lists."""
        pending = self._running(lambda s: s.notify_on_complete and (task_id is None or s.owner_task_id == task_id))
        result: dict[str, Any] = {"waited": [s.id for s in pending], "completed": [], "timed_out": []}
        deadline = time.monotonic() + (600.0 if timeout is None else max(float(timeout), 0.0))
        for session in pending:
            left = deadline - time.monotonic()
            if left > 0 and not session.exited:
                self._registry.wait(session.id, timeout=left, interrupt=_interrupt_flag(None))
            result["completed" if session.exited else "timed_out"].append(session.id)
        return result

    def transfer_ownership(self, session_id: str, *, from_owner: str, to_owner: str, to_task_id: str,
                           to_session_key: str, note: str = "") -> ProcessSession | None:
        """Hand a running job of ``from_owner`` to another owner (a subagent to its parent)."""
        session = self.get(session_id)
        if session is None or session.id not in self._own or session.exited or session.owner_task_id != from_owner:
            return None
        session.owner_task_id, session.task_id, session.session_key = to_owner, to_task_id, to_session_key
        session.handoff_note = note
        return session

    def restore_completions(self) -> int:
        """Upstream replays async-delegation completions here; this adapter's events are durable."""
        return 0

    def request_close_terminal(self, session_id: str) -> dict[str, Any]:
        return {"status": "error", "error": "close_terminal is only available in the Hermes desktop app."}

    # ---- control -------------------------------------------------------------------------
    def kill_process(self, session_id: str, grace: float | None = None, *, source: str = "process.kill",
                     consume_output: bool = True) -> dict[str, Any]:
        """Kill the job's process tree; the result carries its output and ``termination_source``."""
        sid = self._resolve(session_id)
        if sid is None:
            return _not_found(session_id)
        session = self.get(sid)
        running = session is not None and not session.exited
        if running and session is not None:
            session.termination_source = source  # read when the completion is delivered
        result = self._registry.kill(sid, grace=grace)
        status = result.get("status")
        if status == "killed":
            result["termination_source"] = source
        elif session is not None:
            if running and status == "already_exited":
                session.termination_source = ""
            result["termination_source"] = session.termination_source
        if status in ("killed", "already_exited"):
            result["command"] = session.command if session else ""
            if consume_output:
                self._completion_consumed.add(sid)
        self._save_checkpoint()
        return self._view(result)

    def kill_all(self, task_id: str | None = None, grace: float | None = None, *,
                 exclude_ids: frozenset[str] = frozenset(), source: str = "kill_all",
                 consume_output: bool = False) -> int:
        """Kill this adapter's running jobs (of ``task_id``); returns how many were stopped.

        Jobs started with ``persist_on_release=True`` survive the agent-lifecycle sweeps
        (``source`` kill_all, gateway_turn_timeout, agent_close)."""
        lifecycle = source in _LIFECYCLE_SOURCES
        targets = self._running(lambda s: (task_id is None or s.owner_task_id == task_id) and s.id not in exclude_ids
                                and not (lifecycle and s.persist_on_release))
        results = [self.kill_process(s.id, grace=grace, source=source, consume_output=consume_output)
                   for s in targets]
        return sum(r.get("status") in ("killed", "already_exited") for r in results)

    def kill_started_since(self, task_id: str, baseline_ids: Iterable[str] | None, *, source: str) -> int:
        """Kill ``task_id``'s jobs that are not in ``baseline_ids`` (started since the snapshot)."""
        return self.kill_all(task_id, exclude_ids=frozenset(baseline_ids or ()), source=source, consume_output=True)

    def write_stdin(self, session_id: str, data: str) -> dict[str, Any]:
        return self._stdin(session_id, lambda sid: self._registry.write(sid, data))

    def submit_stdin(self, session_id: str, data: str = "") -> dict[str, Any]:
        return self._stdin(session_id, lambda sid: self._registry.submit(sid, data))

    def close_stdin(self, session_id: str) -> dict[str, Any]:
        return self._stdin(session_id, self._registry.close_stdin)

    def _stdin(self, session_id: str, op: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
        sid = self._resolve(session_id)
        return self._view(op(sid)) if sid is not None else _not_found(session_id)


def _close_at_exit(ref: weakref.ref[HermesProcessRegistry]) -> None:
    adapter = ref()
    if adapter is not None:
        adapter.close()


def _owns(event: dict[str, Any], session_key: str, owns_event: Callable[[dict[str, Any]], Any] | None) -> bool:
    """Whether a drain for ``session_key`` may take ``event`` (see drain_notifications)."""
    delegation = event.get("type") == "async_delegation"
    needs_proof = delegation or bool(event.get("session_key") or event.get("origin_ui_session_id"))
    if owns_event is not None and needs_proof:
        try:
            return bool(owns_event(event))
        except Exception:  # noqa: BLE001 - a broken check keeps the event for its owner
            return False
    if session_key and needs_proof:
        return str(event.get("session_key") or "") == session_key
    return not (delegation and event.get("restored"))


def _interrupt_flag(interrupt: Any) -> Interrupt | None:
    """What ProcessRegistry.wait polls: the caller's event/callable, else Hermes' interrupt flag."""
    if interrupt is not None and hasattr(interrupt, "is_set"):
        flag: Interrupt = interrupt
        return flag
    check = interrupt if callable(interrupt) else _hermes_is_interrupted()
    return _Flag(check) if check is not None else None


def _child_overrides(env_vars: dict[str, Any] | None) -> dict[str, Any] | None:
    """``env_vars`` as Hermes passes them: secret-named variables are dropped, and
    ``_HERMES_FORCE_<NAME>`` sets ``<NAME>`` (the one way to pass such a variable on purpose)."""
    if not env_vars:
        return None
    if not isinstance(env_vars, dict):
        raise ValueError(f"env_vars must be a dict of variable names to values, not {type(env_vars).__name__}")
    env = {str(k): str(v) for k, v in env_vars.items() if not str(k).startswith(FORCE_PREFIX)
           and not is_secret_name(str(k))}
    for key, value in env_vars.items():
        name = str(key)[len(FORCE_PREFIX):] if str(key).startswith(FORCE_PREFIX) else ""
        if name:
            env[name] = str(value)
    return env
