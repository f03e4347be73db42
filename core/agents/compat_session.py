"""The session object and notification text of the Hermes adapter (:mod:`.compat`).

:class:`ProcessSession` is what ``spawn_local`` and ``get`` return. Hermes configures a job after
starting it by setting attributes on this object (``watch_patterns``, ``notify_on_complete``,
``watcher_platform``, ...); here those assignments take effect: watch patterns go to the live
job's supervisor, the rest is read when the job's events are delivered, and all of them are
kept in the adapter's checkpoint so ``recover_from_checkpoint`` restores them after a restart.

:func:`format_process_notification` renders a ``completion_queue`` event as the
``[IMPORTANT: ...]`` text Hermes injects into the conversation.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from ..registry.model import parse_time

__all__ = ["PERSISTED", "ROUTE_KEYS", "ProcessSession", "SessionOwner", "format_process_notification",
           "stock_outcome"]

# Watcher routing fields: ``watcher_<key>`` on the session, ``<key>`` in every event.
ROUTE_KEYS = ("platform", "chat_id", "user_id", "user_name", "thread_id", "message_id")
# Settings kept in the adapter's checkpoint (and restored by recover_from_checkpoint).
PERSISTED = ("task_id", "owner_task_id", "session_key", "notify_on_complete", "watch_patterns",
             *(f"watcher_{k}" for k in ROUTE_KEYS), "watcher_interval", "persist_on_release",
             "parent_session_id", "completion_output_chars", "termination_source", "detached", "adopted",
             "handoff_note")
MAX_OUTPUT_CHARS = 200_000
KILLED_EXIT_CODE = -15  # what stock Hermes reports for every job it killed


def stock_outcome(outcome: dict[str, Any], adopted: bool) -> dict[str, Any]:
    """A finished job's exit_code and completion_reason as stock Hermes words them: a killed job
    has exit code -15; a process adopted from stock Hermes' checkpoint ended with an exit code
    nobody saw (None) and reason "exited"."""
    code, reason = outcome.get("exit_code"), outcome.get("completion_reason") or "exited"
    if reason == "killed":
        code = KILLED_EXIT_CODE
    elif adopted and reason == "lost":
        code, reason = None, "exited"
    return {"exit_code": code, "completion_reason": reason, "ended_at": outcome.get("ended_at")}


class SessionOwner(Protocol):
    """What a session asks of the adapter that handed it out (compat.HermesProcessRegistry)."""

    def _apply_watch_patterns(self, session: ProcessSession, patterns: list[str]) -> None: ...

    def _session_changed(self, session: ProcessSession) -> None: ...

    def _job_outcome(self, session_id: str) -> dict[str, Any] | None: ...

    def _output_tail(self, session_id: str, chars: int, masked: bool = True) -> str: ...


class ProcessSession:
    """One job as Hermes sees it: identity and settings as attributes, live status as properties.

    ``exited``, ``exit_code``, ``completion_reason`` and ``output_buffer`` read the job's current
    state (the output is a bounded tail of the log, re-read only when the log changed).
    """

    def __init__(self, owner: SessionOwner | None, info: dict[str, Any], *,
                 outcome: dict[str, Any] | None = None,
                 output: str = "") -> None:
        self._ready = False
        self._owner = owner
        self._outcome = outcome  # fixed outcome: a session that never started (spawn_via_env)
        self._static_output = output
        self._registry_notify = bool(info.get("_registry_notify", False))
        self.id: str = info["session_id"]
        self.pid: int | None = info.get("pid")
        self.command: str = info.get("command", "")
        self.cwd: str | None = info.get("cwd")
        self.pty: bool = bool(info.get("pty", False))
        self.name: str = info.get("name") or ""
        self.task_id: str = info.get("task_id") or ""
        self.owner_task_id: str = info.get("owner_task_id") or self.task_id
        self.session_key: str = info.get("session_key") or ""
        self.started_at: float = parse_time(info.get("started_at", info.get("created_at")), default=time.time())
        self.notify_on_complete: bool = bool(info.get("notify_on_complete", False))
        self.watch_patterns: list[str] = list(info.get("watch_patterns") or [])
        for key in ROUTE_KEYS:
            setattr(self, f"watcher_{key}", info.get(f"watcher_{key}") or "")
        self.watcher_interval: int = int(info.get("watcher_interval") or 0)
        self.persist_on_release: bool = bool(info.get("persist_on_release", False))
        self.parent_session_id: str = info.get("parent_session_id") or ""
        self.completion_output_chars: int = int(info.get("completion_output_chars") or 0)
        self.termination_source: str = info.get("termination_source") or ""
        self.handoff_note: str = info.get("handoff_note") or ""
        self.detached: bool = bool(info.get("detached", False))  # re-adopted by recover_from_checkpoint
        self.adopted: bool = bool(info.get("adopted", False))  # a stock Hermes process: no log, no exit code
        self.pid_scope: str = "host"
        self.process = self.env_ref = self.host_start_time = None  # upstream's in-process handles: none here
        self.systemd_unit, self.wsl_chain, self.heartbeat_seconds = "", False, 0
        self.max_output_chars: int = MAX_OUTPUT_CHARS
        self._watch_hits = 0
        self._watch_disabled = False
        self._final: dict[str, Any] | None = None  # the outcome, once the job has exited
        self._ready = True

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "watch_patterns":
            if not (isinstance(value, (list, tuple)) and all(isinstance(p, str) for p in value)):
                raise TypeError("watch_patterns must be a list of strings")
            value = [p for p in value if p]
            if self.__dict__.get("_ready") and self._owner is not None:
                self._owner._apply_watch_patterns(self, value)
        object.__setattr__(self, name, value)
        if name in PERSISTED and self.__dict__.get("_ready") and self._owner is not None:
            self._owner._session_changed(self)

    @property
    def session_id(self) -> str:
        return self.id

    def _state(self) -> dict[str, Any]:
        """The outcome fields as stock Hermes words them; {} while the job runs."""
        if self._outcome is not None:
            return self._outcome
        if self._final is not None:
            return self._final
        if self._owner is None:
            return {}
        outcome = self._owner._job_outcome(self.id)
        if outcome is None:
            return {}
        if self.termination_source and (outcome.get("completion_reason") == "lost" or (
                outcome.get("completion_reason") == "exited" and (outcome.get("exit_code") or 0) < 0)):
            # the adapter killed it (a kill done without the supervisor's help leaves the
            # supervisor to record a plain signal death, or no record at all)
            outcome = {**outcome, "completion_reason": "killed"}
        if not self.termination_source and outcome.get("killed_by") == "lease":
            self.__dict__["termination_source"] = "lease"  # its owner ended (derived: not saved)
        self._final = stock_outcome(outcome, self.adopted)
        return self._final

    def _settle(self, outcome: dict[str, Any]) -> None:
        """The job has ended with `outcome` (a wait's word: the record may not be on disk yet)."""
        if self._final is None and self._outcome is None:
            self._final = stock_outcome(outcome, self.adopted)

    @property
    def exited(self) -> bool:
        return bool(self._state())

    @property
    def exit_code(self) -> int | None:
        return self._state().get("exit_code")

    @property
    def completion_reason(self) -> str:
        return self._state().get("completion_reason") or "exited"

    @property
    def exited_at(self) -> float:
        return float(self._state().get("ended_at") or 0.0)

    @property
    def output_buffer(self) -> str:
        """The last ``max_output_chars`` characters of output (plain text, secrets masked)."""
        if self._outcome is not None or self._owner is None:
            return self._static_output
        return self._owner._output_tail(self.id, self.max_output_chars)

    def __repr__(self) -> str:
        return f"ProcessSession(id={self.id!r}, pid={self.pid}, command={self.command[:60]!r})"


# ---- notification text --------------------------------------------------------------------
_REASONS = {"lost": "was lost (its supervisor disappeared)", "failed_start": "failed to start"}


def format_process_notification(evt: dict[str, Any]) -> str | None:
    """The ``[IMPORTANT: ...]`` message for one ``completion_queue`` event (None: nothing to say)."""
    if not isinstance(evt, dict):
        return None
    kind = evt.get("type", "completion")
    formatter = _FORMATTERS.get(kind) if isinstance(kind, str) else None
    return formatter(evt) if formatter is not None else None


def _watch_notice(evt: dict[str, Any]) -> str:
    return f"[IMPORTANT: {evt.get('message', '')}]"


def _watch_match(evt: dict[str, Any]) -> str:
    sid, command = evt.get("session_id", "unknown"), evt.get("command", "unknown")
    suppressed = evt.get("suppressed") or 0
    note = f"\n({suppressed} earlier matches were suppressed by rate limit)" if suppressed else ""
    return (f"[IMPORTANT: Background process {sid} matched watch pattern \"{evt.get('pattern', '?')}\".\n"
            f"Command: {command}\nMatched output:\n{evt.get('output', '')}{note}]")


def _delegation(evt: dict[str, Any]) -> str:
    summary = evt.get("summary") or evt.get("error") or ""
    return (f"[ASYNC DELEGATION COMPLETE — {evt.get('delegation_id', 'unknown')}]\n"
            f"Status: {evt.get('status', '?')}\n{summary}")


def _completion(evt: dict[str, Any]) -> str:
    sid, command = evt.get("session_id", "unknown"), evt.get("command", "unknown")
    code = evt.get("exit_code", "?")
    reason = evt.get("completion_reason") or "exited"
    if reason == "killed":
        status = f"terminated by {evt.get('termination_source') or 'Hermes'}"
    else:
        status = _REASONS.get(reason) or ("completed normally" if code == 0 else "exited")
    sigterm = ", SIGTERM" if code in (-15, 143) else ""
    handoff = (f"Handed off to you by a subagent before it finished. Purpose: {evt['handoff_note']}\n"
               if evt.get("handoff_note") else "")
    shown = "exit code unknown" if code is None else f"exit code {code}{sigterm}"  # lost: nobody saw it
    return (f"[IMPORTANT: Background process {sid} {status} ({shown}).\n"
            f"{handoff}Command: {command}\nOutput:\n{evt.get('output', '')}]")


# the message of each event type (other types: no message)
_FORMATTERS: dict[str, Callable[[dict[str, Any]], str]] = {
    "watch_disabled": _watch_notice, "watch_overflow_tripped": _watch_notice,
    "watch_overflow_released": _watch_notice, "watch_match": _watch_match,
    "async_delegation": _delegation, "completion": _completion,
}
