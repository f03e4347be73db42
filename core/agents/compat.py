"""The process registry of the Hermes agent (``tools/process_registry.py``), as durable jobs.

:class:`HermesProcessRegistry` answers every call Hermes 0.19.0 makes on its registry, with the
results stock Hermes gives (keys, wording, consumption rules, the wait limit, the job's shell and
environment: core/agents/compat_stock.py), while every background process is a hermes-procs job: it
survives a restart of Hermes, a human sees it in the dashboard (named ``hermes <task>``) and can
answer, stop or attach to it. The Hermes plugin (core/agents/hermes_plugin.py) puts one in place of
Hermes' own registry; docs/hermes.md says what differs on purpose::

    from hermes_procs.core.agents.compat import HermesProcessRegistry
    process_registry = HermesProcessRegistry()           # home: $HERMES_PROCS_HOME, $HERMES_HOME/procs

    session = process_registry.spawn_local("pytest -x", cwd="/repo", task_id="t1")
    session.notify_on_complete = True                     # attributes set after spawn take effect
    process_registry.poll(session.id)                     # {"status": "running", ...}
    process_registry.wait(session.id, timeout=60)         # {"status": "exited", "exit_code": 0, ...}
    process_registry.read_log(session.id)                 # offset=0: the last 200 lines, as in Hermes

Scope: an adapter owns the jobs it started, re-adopted (``recover_from_checkpoint``: those of an
adapter that is gone, and those stock Hermes recorded in ``processes.json``) or ran through the
registry it replaced; ``kill_all``, ``list_sessions`` and the ``has_active_*`` queries see only
those, so an agent's ``/stop`` never kills the human's dev server. Calls that name a job take any
job of the home. Results are masked for secrets (core/registry/redact.py, and the values of the
secret-named variables a job was given: core/agents/secret_values.py); ``redact=False`` or
``HERMES_PROCS_REDACT=0`` turns that off.
"""

from __future__ import annotations

import atexit
import logging
import os
import queue
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ..registry import logstore
from ..registry.compat_checkpoint import Checkpoint
from ..registry.jobstate import CorruptJob, load
from ..registry.paths import IdError, resolve_id
from ..registry.redact import redact_obj
from ..registry.secretwords import is_secret_name
from ..supervisor import text
from . import compat_remote
from . import compat_results as results
from . import compat_stock as stock
from .compat_adopt import adopt, stock_entries
from .compat_events import Notifications
from .compat_output import OutputFollower
from .compat_session import PERSISTED, ROUTE_KEYS, ProcessSession, format_process_notification
from .secret_values import SecretValues, mask_job_secrets
from .tool import ANSWER_CHARS

if TYPE_CHECKING:
    from ..registry.interface import Interrupt
    from ..registry.process_registry import ProcessRegistry

T = TypeVar("T")

__all__ = ["HermesProcessRegistry", "ProcessSession", "format_process_notification", "owner_name"]

log = logging.getLogger(__name__)

FORCE_PREFIX = "_HERMES_FORCE_"  # env_vars["_HERMES_FORCE_X"] sets X even when X looks secret
_SPAWN_EXTRAS = ("name", "watch_patterns", "max_runtime", "rows", "cols", "notify_on_complete")
_LIFECYCLE_SOURCES = frozenset({"kill_all", "gateway_turn_timeout", "agent_close"})
_WAIT_STEP = 60.0  # the registry's wait is called in steps (it has its own limit)
FINISHED_LISTED_FOR = 1800.0  # seconds after its start a finished job leaves list_sessions (Hermes' TTL)


def owner_name(task_id: str, session_key: str = "") -> str:
    """The job name that shows its owner in `hermes-procs ls` and the dashboard: ``hermes`` and
    the conversation (Hermes' session key, else the task id; "default" says nothing)."""
    for label in (session_key, task_id):
        label = " ".join(str(label or "").split())[:60]
        if label and label != "default":
            return f"hermes {label}"
    return "hermes"


class _Flag:
    """``is_set()`` for ProcessRegistry.wait: the caller's check, or Hermes' interrupt flag."""

    def __init__(self, check: Callable[[], Any]) -> None:
        self._check = check

    def is_set(self) -> bool:
        try:
            return bool(self._check())
        except Exception:  # noqa: BLE001 - a broken check never aborts the wait
            return False


# size: Hermes' own ProcessRegistry API, one method per call Hermes makes, each a few lines over
# the registry; results, notifications, sessions, output, secrets, checkpoints, adoption and
# sandboxes are in the compat_*.py modules beside it.
class HermesProcessRegistry:
    """Hermes' ``ProcessRegistry`` calls and results over a durable :class:`~hermes_procs.core.ProcessRegistry`."""

    def __init__(self, home: str | os.PathLike[str] | None = None, *, consumer: str | None = None,
                 redact: bool = True, poll_interval: float = 0.2, registry: ProcessRegistry | None = None,
                 restore: bool = True) -> None:
        """`restore`: queue the async-delegation completions nobody received, as a new stock
        registry does (the plugin takes them over from the registry it replaces instead)."""
        if registry is None:
            from ..registry.process_registry import ProcessRegistry

            # this machine's jobs, even when $HERMES_PROCS_HOST names another one for the CLI
            registry = ProcessRegistry(home=home, host="local")
        self._registry = registry
        self._redact = redact
        self._own_only = consumer is None
        instance = uuid.uuid4().hex[:8]
        self.consumer = consumer or f"compat-{os.getpid()}-{instance}"
        self._sessions: dict[str, ProcessSession] = {}  # every session handed out: get() returns the same
        self._own: set[str] = set()
        self._tails: dict[str, tuple[tuple[int, int, int, int, bool], str]] = {}
        self._errors_logged: set[str] = set()
        self._secrets = SecretValues()
        # what this process would give its jobs: after a restart the jobs taken back were given
        # the same values by the process before (they were masked then, and were shown raw after)
        self._secrets.add_from(os.environ)
        self._stock: Any = None  # the registry the plugin replaced: runs what hermes-procs cannot
        self._remote: dict[str, Any] = {}  # session id -> the registry of the sandbox host it runs on
        self._hosts: dict[tuple[str, tuple[str, ...]], Any] = {}  # sandbox host -> its registry
        self.pending_watchers: list[dict[str, Any]] = []
        self._on_output: Any = None
        self.on_close: Any = None
        self._output = OutputFollower(lambda: self._on_output)
        self._checkpoint = Checkpoint(registry.home, instance)
        self._lock = threading.RLock()
        self._notes = Notifications(self, poll_interval)
        self._notes.pump()  # places a new consumer's cursor at the end of the log: nothing old is replayed
        if restore:
            self.restore_completions()
        atexit.register(_close_at_exit, weakref.ref(self))
        if not self._own_only:
            self._notes.start()

    # ---- plumbing ------------------------------------------------------------------------
    @property
    def registry(self) -> ProcessRegistry:
        """The underlying ProcessRegistry (raw, unmasked results, every job of the home)."""
        return self._registry

    def _view(self, obj: T) -> T:
        """`obj` with every string in it masked (when redacting): the same shape."""
        if not self._redact:
            return obj
        masked = self._secrets.mask(redact_obj(obj))  # and each job's own values (a stack's env):
        return cast("T", mask_job_secrets(masked, self._registry, raw=obj))  # the adapter reads every job

    def _log_once(self, what: str, exc: BaseException | str) -> None:
        key = f"{what}: {exc}"
        if key not in self._errors_logged:
            self._errors_logged.add(key)
            log.warning("hermes-procs: %s failed: %s", what, text.one_line(str(exc)))

    def _resolve(self, session_id: Any) -> str | None:
        """The full id of a job of this home or of a sandbox job of this adapter, or None
        (unknown, malformed or ambiguous)."""
        try:
            return resolve_id(self._registry.jobs_dir, session_id)
        except IdError:
            return session_id if isinstance(session_id, str) and session_id in self._remote else None

    def _reg(self, session_id: str) -> Any:
        """The registry the job lives in: this machine's, or its sandbox host's."""
        return self._remote.get(session_id, self._registry)

    def _stock_has(self, session_id: Any) -> bool:
        """Whether `session_id` is a process of the registry the plugin replaced (not a job here)."""
        return (self._stock is not None and isinstance(session_id, str) and self._resolve(session_id) is None
                and self._stock.get(session_id) is not None)

    @property
    def completion_queue(self) -> queue.Queue[dict[str, Any]]:
        """Events of finished and matching jobs, oldest first (completion, watch_match,
        watch_disabled), and what Hermes itself puts there (async_delegation)."""
        self._notes.start()
        return self._notes.queue

    @property
    def on_output(self) -> Any:
        """Hermes' live-output sink, ``sink(session, chunk)``: fed from the jobs' logs (agents/compat_output.py)."""
        return self._on_output

    @on_output.setter
    def on_output(self, sink: Any) -> None:
        self._on_output = sink
        if self._stock is not None:
            self._stock.on_output = sink
        if sink is None:
            self._output.stop_all()
        for session in self._running(lambda s: not s.adopted):
            self._output.follow(session, self._reg(session.id), from_start=False)

    def pump(self) -> int:
        """Move pending events onto ``completion_queue`` now; returns how many were queued."""
        return self._notes.pump()

    def _read_events(self) -> list[dict[str, Any]]:
        """The events of the logs (this machine's, the sandbox hosts') this adapter has not read yet."""
        found = []
        for registry in [self._registry, *self._hosts.values()]:
            try:
                events = registry.drain_events(self.consumer, all_types=True, only_new=True)
            except Exception as exc:  # noqa: BLE001 - the feeder thread must survive, but say why once
                self._log_once("reading the event log", exc)
                continue
            if not isinstance(events, list):
                self._log_once("reading the event log", str(events.get("error") if isinstance(events, dict)
                                                            else events))
                continue
            found.extend(events)
        return found

    def take_over(self, old: Any) -> None:
        """Stand in for `old`, the registry Hermes made at import (the plugin calls this): its
        queued events (restored async-delegation results) and pending watchers come here, its
        sinks too, and it keeps running what it had started and what hermes-procs cannot run
        (backends other than local, docker and ssh), its completions landing on this queue."""
        self._stock = old
        pending = getattr(old, "completion_queue", None)
        while pending is not None:
            try:
                self._notes.queue.put(pending.get_nowait())
            except queue.Empty:
                break
        if pending is not None:
            old.completion_queue = self._notes.queue
        self.pending_watchers.extend(getattr(old, "pending_watchers", None) or [])
        old.pending_watchers = []
        self.on_close = self.on_close or getattr(old, "on_close", None)
        self.on_output = self._on_output or getattr(old, "on_output", None)

    def close(self) -> None:
        """Stop the threads and checkpoint the jobs still running (they stay recoverable)."""
        self._notes.close()
        self._output.close()
        self._save_checkpoint()
        if self._own_only:
            for registry in [self._registry, *self._hosts.values()]:
                try:
                    registry.forget_consumer(self.consumer)
                except Exception as exc:  # noqa: BLE001
                    self._log_once("forgetting the event cursor", exc)

    def __enter__(self) -> HermesProcessRegistry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- notifications -------------------------------------------------------------------
    def is_completion_consumed(self, session_id: str) -> bool:
        """True when the agent has the result in hand (wait, read_log to the end, kill_process)."""
        return self._notes.is_consumed(self._resolve(session_id) or str(session_id))

    def drain_notifications(self, session_key: str = "", owns_event: Callable[[dict[str, Any]], Any] | None = None, *,
                            skip_poll_observed: bool = True) -> list[tuple[dict[str, Any], str]]:
        """Pop every pending event as ``(event, text)``; events of other sessions go back (see
        core/agents/compat_events.py for the rules, Hermes' own)."""
        return self._notes.drain(session_key, owns_event, skip_poll_observed)

    def restore_completions(self) -> int:
        """Queue the async-delegation completions no session has received yet (Hermes' ledger)."""
        try:
            return stock.restore_delegations(self._notes.queue)
        except Exception as exc:  # noqa: BLE001 - as Hermes: a warning, the registry works on
            self._log_once("restoring async delegation completions", exc)
            return 0

    # ---- spawning ------------------------------------------------------------------------
    def spawn_local(self, command: str, cwd: str | None = None, task_id: str = "", session_key: str = "",
                    env_vars: dict[str, Any] | None = None, use_pty: bool = False, owner_task_id: str = "",
                    persist_on_release: bool = False, **extra: Any) -> ProcessSession:
        """Start ``command`` as Hermes starts a background process, as a durable job owned by
        this adapter; returns its :class:`ProcessSession`. Raises ``RuntimeError`` when it cannot start."""
        unknown = set(extra) - set(_SPAWN_EXTRAS)
        if unknown:
            raise TypeError(f"spawn_local() got unexpected keyword argument(s): {', '.join(sorted(unknown))}")
        notify = bool(extra.pop("notify_on_complete", False))
        extra.setdefault("name", owner_name(task_id, session_key))
        extra.setdefault("rows", stock.ROWS)
        extra.setdefault("cols", stock.COLS)
        try:
            if cwd is not None and not isinstance(cwd, (str, os.PathLike)):
                raise TypeError(f"cwd must be a path, not {cwd!r}")
            folder = stock.safe_cwd(cwd)
            environ = stock.job_environ(env_vars)
            env = None if environ is not None else _child_overrides(env_vars)
        except (TypeError, ValueError, AttributeError) as exc:
            raise RuntimeError(f"could not start {command!r}: {exc}") from None
        self._secrets.add_from(environ if environ is not None else env or {})  # a _HERMES_FORCE_ one too
        with self._lock:  # the id is known before its events can be drained
            result = self._registry.spawn(command, cwd=folder, env=env, environ=environ,
                                          shell=stock.shell_argv(bool(use_pty)), pty=bool(use_pty),
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
        self._output.follow(session, self._registry)
        return session

    def _adopt(self, session: ProcessSession) -> ProcessSession:
        self._sessions[session.id] = session
        self._own.add(session.id)
        return session

    def spawn_via_env(self, env: Any, command: str, cwd: str | None = None, task_id: str = "",
                      session_key: str = "", timeout: int = 10, owner_task_id: str = "",
                      persist_on_release: bool = False) -> Any:
        """A background process of one of Hermes' sandboxes: a local environment runs it here,
        Docker and SSH ones as a job on the sandbox (core/agents/compat_remote.py); any other backend,
        or a sandbox hermes-procs cannot run jobs on, runs it as stock Hermes does (through the
        registry the plugin replaced), or, without one, gets a session that failed to start."""
        if type(env).__name__ == "LocalEnvironment":
            return self.spawn_local(command, cwd=cwd or getattr(env, "cwd", None), task_id=task_id,
                                    session_key=session_key, owner_task_id=owner_task_id,
                                    persist_on_release=persist_on_release)
        target = compat_remote.sandbox_host(env)
        if target is not None:
            session = self._spawn_on_host(target, command, [cwd, getattr(env, "cwd", None), None],
                                          task_id, session_key, owner_task_id)
            if session is not None:
                return session
        if self._stock is not None:
            return self._stock.spawn_via_env(env, command, cwd=cwd, task_id=task_id, session_key=session_key,
                                             timeout=timeout)
        message = (f"Failed to start: hermes-procs cannot run background processes of the "
                   f"{type(env).__name__} backend (use the local terminal backend)")
        info = {"session_id": f"proc_{uuid.uuid4().hex[:12]}", "command": command, "cwd": cwd, "task_id": task_id,
                "owner_task_id": owner_task_id or task_id, "session_key": session_key,
                "termination_source": "failed_start", "persist_on_release": persist_on_release}
        return ProcessSession(None, info, outcome={"exit_code": -1, "completion_reason": "failed_start"},
                              output=message)

    def _spawn_on_host(self, target: tuple[str, tuple[str, ...]], command: str, cwds: list[str | None],
                       task_id: str, session_key: str, owner_task_id: str) -> ProcessSession | None:
        """A job on a sandbox host, owned by this adapter; None (and one line in the log) when
        the host cannot run it."""
        labels = {"task_id": task_id or "", "session_key": session_key or "", "name": owner_name(task_id, session_key)}
        try:
            registry, result = compat_remote.spawn(self._hosts, target, self.consumer, command, cwds, labels)
        except ValueError as exc:  # a host URL hermes-procs cannot use
            registry, result = None, {"status": "error", "error": str(exc)}
        if result.get("status") != "running" or registry is None:
            self._log_once(f"running a background process on {target[0]} (it runs as in stock Hermes)",
                           str(result.get("error")))
            return None
        info = {**result, **labels, "owner_task_id": owner_task_id or task_id or "", "started_at": time.time()}
        with self._lock:
            self._remote[result["session_id"]] = registry
            session = self._adopt(ProcessSession(self, info))
        session.pid_scope = "sandbox"
        self._output.follow(session, registry)
        return session

    # ---- settings after spawn and the checkpoint -----------------------------------------
    def _apply_watch_patterns(self, session: ProcessSession, patterns: list[str]) -> None:
        if session._outcome is not None or session.exited or session.adopted:
            return
        result = self._reg(session.id).set_watch_patterns(session.id, patterns)
        if result.get("status") not in ("ok", "already_exited"):
            raise ValueError(result.get("error", "could not set watch_patterns"))

    def _session_changed(self, session: ProcessSession) -> None:
        if session.id in self._own:
            self._save_checkpoint()

    def _save_checkpoint(self) -> None:
        with self._lock:
            entries = [{"session_id": s.id, **{k: getattr(s, k) for k in PERSISTED},
                        "registry_notify": s._registry_notify}
                       for sid, s in self._sessions.items()
                       if sid in self._own and sid not in self._remote and not s.exited]
        try:
            self._checkpoint.save(entries)
        except OSError as exc:
            self._log_once("writing the checkpoint", exc)

    def recover_from_checkpoint(self) -> int:
        """Take over the running jobs of a Hermes that is gone; returns how many.

        Those of an adapter that is gone (this agent before a restart) come back with their
        settings and all their output; the processes a stock Hermes recorded in its
        ``processes.json`` (it ran without hermes-procs) become jobs too (core/agents/compat_adopt.py).
        Both are ``detached``; watched ones (``watcher_interval`` > 0) are queued on
        ``pending_watchers`` for the gateway, as in Hermes."""
        adopted = self._recover_own() + self._recover_stock()
        self._save_checkpoint()
        return adopted

    def _recover_own(self) -> int:
        adopted = 0
        for path, entries in self._checkpoint.orphaned():
            for entry in entries:
                fields = {k: entry[k] for k in PERSISTED if k in entry}
                adopted += self._take(entry["session_id"], {**fields, "_registry_notify": entry.get("registry_notify")})
            path.unlink(missing_ok=True)
        return adopted

    def _recover_stock(self) -> int:
        adopted = 0
        for entry in stock_entries(stock.checkpoint_path()):
            sid = entry["session_id"]
            made = adopt(self._registry.jobs_dir, entry,
                         owner_name(str(entry.get("task_id") or ""), str(entry.get("session_key") or "")))
            if not made and self._resolve(sid) is None:
                continue
            fields = {k: entry[k] for k in (*PERSISTED, "pid") if k in entry}
            adopted += self._take(sid, {**fields, "adopted": made or None})
        return adopted

    def _take(self, session_id: str, fields: dict[str, Any]) -> int:
        """Own the running job `session_id` with `fields` (from a checkpoint): 1, else 0. A
        `notify_on_complete` job of ours that ended while no agent ran is owned too (0), and its
        completion queued at the next pump: the agent was told it would be notified."""
        sid = self._resolve(session_id)
        if sid is None or sid in self._own:
            return 0
        info = self._registry.get(sid)
        running = info.get("status") == "running"
        if not running and not (info.get("status") == "exited" and fields.get("notify_on_complete")
                                and not fields.get("adopted")):
            return 0
        meta = info.get("meta", {})
        adopted = bool(fields.get("adopted") or meta.get("adopted_from"))
        session = ProcessSession(self, {**info, **meta, **{k: v for k, v in fields.items() if v is not None},
                                        "detached": True, "adopted": adopted,
                                        "started_at": meta.get("created_at"),
                                        "_registry_notify": bool(fields.get("_registry_notify"))})
        with self._lock:
            self._sessions[sid] = session
            self._adopt(session)
        if adopted or not running:  # no supervisor's event will tell of its end: look at it
            self._notes.watch_adopted(session)
        if not running:
            return 0
        if session.watcher_interval > 0:
            self.pending_watchers.append({
                "session_id": session.id, "check_interval": session.watcher_interval,
                "session_key": session.session_key, **{key: getattr(session, f"watcher_{key}") for key in ROUTE_KEYS},
                "notify_on_complete": session.notify_on_complete})
        return 1

    # ---- queries -------------------------------------------------------------------------
    def get(self, session_id: str) -> Any:
        """The job (full id or unique prefix) as a :class:`ProcessSession` (the same object each
        time), a process of the replaced registry as its own session, or None."""
        sid = self._resolve(session_id) if isinstance(session_id, str) and session_id else None
        if sid is None:
            return self._stock.get(session_id) if self._stock_has(session_id) else None
        with self._lock:
            session = self._sessions.get(sid)
            if session is None:
                info = self._registry.get(sid)
                if info.get("status") not in ("running", "exited"):
                    return None
                meta = info.get("meta", {})
                session = ProcessSession(self, {**info, **meta, "started_at": meta.get("created_at"),
                                                "adopted": bool(meta.get("adopted_from")),
                                                "_registry_notify": meta.get("notify_on_complete", False)})
                self._sessions[sid] = session
            return session

    def _owned(self) -> list[ProcessSession]:
        with self._lock:
            return [s for sid, s in self._sessions.items() if sid in self._own]

    def _job_outcome(self, session_id: str) -> dict[str, Any] | None:
        """The job's outcome once it has ended (None while it runs); pruned or corrupt: lost."""
        if session_id in self._remote:
            got = self._remote[session_id].poll(session_id)
            if got.get("status") != "exited":
                return None  # running, or the host is out of reach for now
            return {k: got.get(k) for k in ("exit_code", "completion_reason", "killed_by")}
        try:
            job = load(self._registry.job_dir(session_id))
        except (CorruptJob, IdError, OSError, ValueError):
            return {"exit_code": None, "completion_reason": "lost"}
        return None if job.running else dict(job.outcome)

    def _output_tail(self, session_id: str, chars: int, masked: bool = True) -> str:
        """The last ``chars`` characters of the job's output as it was written (escape sequences,
        ``\r`` and all: Hermes' output buffer); re-read only when the log changed."""
        if session_id in self._remote:
            got = self._remote[session_id].log_bytes(session_id, max_bytes=min(chars * 4 + 4, 4 << 20))
            tail = _decoded_tail(got.get("data") or b"", chars) if isinstance(got, dict) else ""
            return self._view(tail) if masked else tail
        try:
            jobdir = self._registry.job_dir(session_id)
            st = os.stat(jobdir / "output.log")
            stamp = (st.st_ino, st.st_size, st.st_mtime_ns, chars, masked)
        except (OSError, IdError):
            return ""
        cached = self._tails.get(session_id)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        tail = _decoded_tail(logstore.tail_bytes(jobdir, chars * 4 + 4), chars)
        if masked:
            tail = self._view(tail)
            self._tails[session_id] = (stamp, tail)
        return tail

    def _session(self, session_id: Any) -> ProcessSession | None:
        found = self.get(session_id) if isinstance(session_id, str) else None
        return found if isinstance(found, ProcessSession) else None

    def _no_history(self, session: ProcessSession) -> bool:
        return session.adopted and not self._output_tail(session.id, 1, masked=False)

    def poll(self, session_id: str) -> dict[str, Any]:
        """Status and the last 1000 characters of output (stock Hermes' keys)."""
        if self._stock_has(session_id):
            return cast("dict[str, Any]", self._stock.poll(session_id))
        session = self._session(session_id)
        if session is None:
            return results.not_found(session_id)
        result = results.poll_result(session, self._output_tail(session.id, 1000, masked=False),
                                     self._no_history(session))
        if session.exited:
            self._notes.poll_observed.add(session.id)
        return self._view(result)

    def read_log(self, session_id: str, offset: int = 0, limit: int = 200) -> dict[str, Any]:
        """Lines of output, as Hermes pages them: ``offset=0`` (the default) the last ``limit``
        lines, ``offset=N`` lines N.. (N counted from the first line the log still holds)."""
        if self._stock_has(session_id):
            return cast("dict[str, Any]", self._stock.read_log(session_id, offset=offset, limit=limit))
        session = self._session(session_id)
        if session is None:
            return results.not_found(session_id)
        exited = session.exited  # before reading: a page read after the exit holds its last line
        tail = not offset and isinstance(limit, int) and limit > 0
        page = self._reg(session.id).read_log(session.id, offset=None if tail else offset, limit=limit,
                                              max_chars=ANSWER_CHARS)
        if page.get("status") not in ("running", "exited"):
            return self._view(page)
        result = results.log_page(session, page, tail)
        total = int(page.get("total_lines") or 0)
        seen_end = total == 0 or (bool(result["output"]) and (tail or _reached(page, offset, limit) >= total))
        if exited and seen_end:
            self._notes.consumed.add(session.id)
        return self._view(result)

    def wait(self, session_id: str, timeout: float | None = None, interrupt: Any = None) -> dict[str, Any]:
        """Block until the job exits, ``timeout`` passes (at most ``$TERMINAL_TIMEOUT``, 180 s,
        as in Hermes) or the wait is interrupted (Hermes' per-thread flag, or ``interrupt``: a
        ``threading.Event`` or a callable)."""
        if self._stock_has(session_id):
            return cast("dict[str, Any]", self._stock.wait(session_id, timeout=timeout))
        limit, note = stock.max_wait(), None
        if timeout and not isinstance(timeout, bool) and isinstance(timeout, (int, float)) and timeout > limit:
            note = f"Requested wait of {timeout}s was clamped to configured limit of {limit}s"
            effective: float = limit
        elif timeout is None or timeout == 0:
            effective = limit
        elif isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
            return {"status": "error", "error": f"timeout must be a number of seconds, not {timeout!r}"}
        else:
            effective = timeout
        session = self._session(session_id)
        if session is None:
            return results.not_found(session_id)
        outcome = self._wait_for(session, effective, _interrupt_flag(interrupt))
        if outcome == "exited":
            self._notes.consumed.add(session.id)
            return self._view(results.wait_exited(session, self._output_tail(session.id, 2000, False), note))
        output = self._output_tail(session.id, 1000, masked=False)
        if outcome == "interrupted":
            return self._view(results.wait_interrupted(session, output, note))
        return self._view(results.wait_timeout(session, output, note, effective))

    def _wait_for(self, session: ProcessSession, seconds: float, interrupt: Interrupt | None) -> str:
        """"exited", "interrupted" or "timeout", waiting in steps (the registry's own limit)."""
        deadline = time.monotonic() + seconds
        while not session.exited:
            left = deadline - time.monotonic()
            if left <= 0:
                return "timeout"
            if interrupt is not None and interrupt.is_set():
                return "interrupted"
            got = self._reg(session.id).wait(session.id, timeout=min(left, _WAIT_STEP), interrupt=interrupt)
            status = got.get("status")
            if status == "exited":
                session._settle(got)
            elif status == "interrupted":
                return "interrupted"
            elif status not in ("timeout", "running"):  # an error: the job folder went away
                return "exited" if session.exited else "timeout"
        return "exited"

    def list_sessions(self, task_id: str | None = None, session_key: str | None = None, *,
                      include_retained: bool = False) -> list[dict[str, Any]]:
        """This adapter's jobs (and the replaced registry's processes), as Hermes lists them; with
        ``task_id`` and/or ``session_key`` those of the task OR of the session key (a process of
        another task under the same key is flagged ``session_scoped``)."""
        entries = []
        for session in self._listed():
            if (task_id or session_key) and not ((task_id and session.task_id == task_id) or
                                                  (session_key and session.session_key == session_key)):
                continue
            preview = self._output_tail(session.id, 200, masked=False)
            entries.append(results.list_entry(session, preview, task_id, session_key))
        if self._stock is not None:
            entries.extend(self._stock.list_sessions(task_id=task_id, session_key=session_key))
        return self._view(entries)

    def _listed(self) -> list[ProcessSession]:
        """This adapter's jobs as Hermes lists its sessions: the running ones (oldest first), then
        the finished ones in the order they ended, those started over 30 minutes ago left out
        (they stay reachable by id)."""
        now, running, finished = time.time(), [], []
        for session in self._owned():
            if not session.exited:
                running.append(session)
            elif now - session.started_at <= FINISHED_LISTED_FOR:
                finished.append(session)
        running.sort(key=lambda s: s.started_at)
        finished.sort(key=lambda s: s.exited_at)
        return running + finished

    def _running(self, predicate: Callable[[ProcessSession], bool] = lambda s: True) -> list[ProcessSession]:
        return [s for s in self._owned() if predicate(s) and not s.exited]

    def _stock_says(self, method: str, *args: Any) -> bool:
        return self._stock is not None and bool(getattr(self._stock, method)(*args))

    def has_active_processes(self, task_id: str | None = None) -> bool:
        """Any running job of this adapter (of ``task_id``)."""
        return bool(self._running(lambda s: task_id is None or s.task_id == task_id)) or (
            task_id is not None and self._stock_says("has_active_processes", task_id))

    def has_active_for_session(self, session_key: str, max_active_age: float | None = None) -> bool:
        """Any running job of this session key; jobs older than ``max_active_age`` seconds don't count."""
        now = time.time()
        return bool(self._running(lambda s: s.session_key == session_key and (
            max_active_age is None or now - s.started_at < max_active_age))) or self._stock_says(
            "has_active_for_session", session_key, max_active_age)

    def has_any_active(self) -> bool:
        return bool(self._running()) or self._stock_says("has_any_active")

    def count_running(self) -> int:
        return len(self._running()) + (int(self._stock.count_running()) if self._stock is not None else 0)

    def snapshot_running_ids(self, task_id: str) -> frozenset[str]:
        return frozenset(s.id for s in self._running(lambda s: s.owner_task_id == task_id))

    def running_owned_by(self, owner_task_id: str) -> list[ProcessSession]:
        return self._running(lambda s: s.owner_task_id == owner_task_id)

    def unread_completions_owned_by(self, owner_task_id: str) -> list[ProcessSession]:
        """Exited notify_on_complete jobs of ``owner_task_id`` whose result nobody read."""
        seen = self._notes.consumed | self._notes.poll_observed
        return [s for s in self._owned() if s.owner_task_id == owner_task_id and s.notify_on_complete and s.exited
                and s.exit_code is not None and s.id not in seen]

    def is_session_waiting(self, session_id: str) -> bool:
        """Whether a goal loop should stay parked on this job: it runs and, if it has watch
        patterns, none has matched yet."""
        if self._stock_has(session_id):
            return bool(self._stock.is_session_waiting(session_id))
        session = self._session(session_id)
        if session is None or session.exited:
            return False
        self.pump()
        return not (session.watch_patterns and not session._watch_disabled and session._watch_hits > 0)

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
                self._wait_for(session, left, _interrupt_flag(None))
            result["completed" if session.exited else "timed_out"].append(session.id)
        return result

    def transfer_ownership(self, session_id: str, *, from_owner: str, to_owner: str, to_task_id: str,
                           to_session_key: str, note: str = "") -> ProcessSession | None:
        """Hand a running job of ``from_owner`` to another owner (a subagent to its parent)."""
        session = self._session(session_id)
        if session is None or session.id not in self._own or session.exited or session.owner_task_id != from_owner:
            return None
        session.owner_task_id, session.task_id, session.session_key = to_owner, to_task_id, to_session_key
        session.handoff_note = note
        return session

    def request_close_terminal(self, session_id: str) -> dict[str, Any]:
        """Ask the desktop app to close the read-only tab of a job (the job keeps running)."""
        sink = self.on_close
        if sink is None:
            return {"status": "error", "error": "close_terminal is only available in the Hermes desktop app."}
        try:
            sink(self.get(session_id), session_id)
        except Exception as exc:  # noqa: BLE001 - the sink's failure is the answer
            return {"status": "error", "error": str(exc)}
        return {"status": "ok", "closed": session_id,
                "note": ("Closed the read-only terminal tab. The process was not killed; its output remains "
                         "available and the user can reopen the tab from the status stack.")}

    # ---- control -------------------------------------------------------------------------
    def kill_process(self, session_id: str, grace: float | None = None, *, source: str = "process.kill",
                     consume_output: bool = True) -> dict[str, Any]:
        """Kill the job's process tree; the result carries its output and ``termination_source``."""
        if self._stock_has(session_id):
            return cast("dict[str, Any]", self._stock.kill_process(session_id, source=source,
                                                                   consume_output=consume_output))
        session = self._session(session_id)
        if session is None:
            return results.not_found(session_id)
        output = self._output_tail(session.id, 2000, masked=False)
        if session.exited:
            if consume_output:
                self._notes.consumed.add(session.id)
            return self._view(results.already_exited(session, output))
        session.termination_source = source  # read when the completion is delivered
        if consume_output:
            self._notes.consumed.add(session.id)
        got = self._reg(session.id).kill(session.id, grace=stock.kill_grace() if grace is None else grace)
        status = got.get("status")
        if status == "already_exited":
            session.termination_source = ""
            self._save_checkpoint()
            return self._view(results.already_exited(session, output))
        self._save_checkpoint()
        if status != "killed":
            return self._view({"status": "error", "error": got.get("error", "could not kill the process")})
        return self._view(results.killed(session, output, source))

    def kill_all(self, task_id: str | None = None, grace: float | None = None, *,
                 exclude_ids: frozenset[str] = frozenset(), source: str = "kill_all",
                 consume_output: bool = False) -> int:
        """Kill this adapter's running jobs (of ``task_id``), and the replaced registry's
        processes; returns how many were stopped. Jobs started with ``persist_on_release=True``
        survive the agent-lifecycle sweeps (``source`` kill_all, gateway_turn_timeout, agent_close)."""
        lifecycle = source in _LIFECYCLE_SOURCES
        targets = self._running(lambda s: (task_id is None or s.task_id == task_id) and s.id not in exclude_ids
                                and not (lifecycle and s.persist_on_release))
        got = [self.kill_process(s.id, grace=grace, source=source, consume_output=consume_output) for s in targets]
        stopped = sum(r.get("status") in ("killed", "already_exited") for r in got)
        if self._stock is not None and not exclude_ids:
            stopped += int(self._stock.kill_all(task_id))
        return stopped

    def kill_started_since(self, task_id: str, baseline_ids: Iterable[str] | None, *, source: str) -> int:
        """Kill ``task_id``'s jobs that are not in ``baseline_ids`` (started since the snapshot)."""
        return self.kill_all(task_id, exclude_ids=frozenset(baseline_ids or ()), source=source, consume_output=True)

    def write_stdin(self, session_id: str, data: str) -> dict[str, Any]:
        """Send `data` to the job's input as it is (PTY jobs, and pipe jobs: they have a real stdin here)."""
        return self._stdin(session_id, "write", lambda sid: self._reg(sid).write(sid, data), data)

    def submit_stdin(self, session_id: str, data: str = "") -> dict[str, Any]:
        """As write_stdin, with a newline appended (Enter)."""
        return self._stdin(session_id, "submit", lambda sid: self._reg(sid).write(sid, _with_enter(data)), data)

    def close_stdin(self, session_id: str) -> dict[str, Any]:
        """End the job's input (EOF)."""
        return self._stdin(session_id, "close", lambda sid: self._reg(sid).close_stdin(sid))

    def _stdin(self, session_id: str, action: str, op: Callable[[str], dict[str, Any]],
               *data: str) -> dict[str, Any]:
        if self._stock_has(session_id):
            method = getattr(self._stock, f"{action}_stdin")
            return cast("dict[str, Any]", method(session_id, *data))
        session = self._session(session_id)
        if session is None:
            return results.not_found(session_id)
        if session.exited:
            return {"status": "already_exited", "error": "Process has already finished"}
        return self._view(results.stdin_result(op(session.id), session.pty, action))


def _close_at_exit(ref: weakref.ref[HermesProcessRegistry]) -> None:
    adapter = ref()
    if adapter is not None:
        adapter.close()


def _with_enter(data: Any) -> Any:
    """`data` and a newline, as Hermes submits (also to a PTY); other types go to the registry's check."""
    if isinstance(data, str):
        return data + "\n"
    return bytes(data) + b"\n" if isinstance(data, (bytes, bytearray)) else data


def _decoded_tail(data: bytes, chars: int) -> str:
    """The last `chars` characters of raw output bytes (a character cut at the start dropped)."""
    skip = 0
    while skip < min(3, len(data)) and 0x80 <= data[skip] < 0xC0:
        skip += 1
    return data[skip:].decode("utf-8", errors="replace")[-chars:]


def _interrupt_flag(interrupt: Any) -> Interrupt | None:
    """What ProcessRegistry.wait polls: the caller's event/callable, else Hermes' interrupt flag."""
    if interrupt is not None and hasattr(interrupt, "is_set"):
        flag: Interrupt = interrupt
        return flag
    return _Flag(interrupt if callable(interrupt) else stock.interrupted)


def _child_overrides(env_vars: dict[str, Any] | None) -> dict[str, Any] | None:
    """``env_vars`` without Hermes (the adapter on its own): secret-named variables are dropped,
    and ``_HERMES_FORCE_<NAME>`` sets ``<NAME>`` (the one way to pass such a variable on purpose)."""
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


def _reached(page: dict[str, Any], offset: int, limit: int) -> int:
    """The line after the last one a page from `offset` holds (fewer than `limit` when capped)."""
    return int(page["first_line"]) + int(page["shown_lines"]) if page.get("capped") else int(offset) + int(limit)

