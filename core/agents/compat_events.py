"""The notifications of the Hermes adapter (:mod:`.compat`): Hermes' ``completion_queue``, fed from
the durable event log, and the consumption rules of stock Hermes 0.19.0.

Stock Hermes puts an event on ``completion_queue`` when a ``notify_on_complete`` job exits
(``completion``), when a line matches a watch pattern (``watch_match``) and when watching stops
(``watch_disabled``); Hermes' own code puts async-delegation completions there too. Its CLI, TUI
and gateway take them off the queue and inject them into the conversation. A completion is not
injected when the agent already has the result in hand: after ``wait`` saw the exit, after
``read_log`` reached the end of an exited job's output, or after ``kill_process`` (consumed);
``drain_notifications`` also skips a job whose exit ``poll`` showed (poll observed), unless the
caller asks otherwise (the gateway and TUI do).

Here the events come from the job's supervisor, through the home's event log: a feeder thread
moves those of the adapter's own jobs onto the queue (a new adapter starts at the log's end,
nothing old is replayed). Events are shaped as stock Hermes shapes them.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from .compat_session import ROUTE_KEYS, ProcessSession, SessionOwner
from .compat_stock import notification_text, strip_ansi

__all__ = ["Adapter", "Notifications", "owns"]

T = TypeVar("T")

COMPLETION_OUTPUT_CHARS = 2000
LOST_EVERY = 2.0  # seconds between looks for jobs of ours whose supervisor died (they report no end)


class Adapter(SessionOwner, Protocol):
    """What the notifications read of the adapter they feed (compat.HermesProcessRegistry)."""

    consumer: str
    _sessions: dict[str, ProcessSession]
    _own: set[str]
    _own_only: bool
    _stock: Any  # the registry the plugin replaced, if any
    _remote: dict[str, Any]  # session id -> the registry of the sandbox host it runs on

    def _read_events(self) -> list[dict[str, Any]]: ...

    def _save_checkpoint(self) -> None: ...

    def _log_once(self, what: str, exc: BaseException | str) -> None: ...

    def _view(self, obj: T) -> T: ...


class Notifications:
    """The queue, the consumed and poll-observed sets, and the thread that feeds the queue."""

    def __init__(self, adapter: Adapter, poll_interval: float) -> None:
        self._adapter = adapter
        self.queue: queue.Queue[dict[str, Any]] = queue.Queue()
        self.consumed: set[str] = set()
        self.poll_observed: set[str] = set()
        self._poll_interval = poll_interval
        self._lock = threading.RLock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._watched: dict[str, bool] = {}  # adopted sessions (no supervisor, no events): exited yet?
        self._lost_look = 0.0
        self._ended: set[str] = set()  # sessions of ours seen ended: not looked at again

    # ---- the feeder ------------------------------------------------------------------------
    def start(self) -> None:
        with self._lock:
            if self._stop.is_set() or (self._thread is not None and self._thread.is_alive()):
                return
            self._thread = threading.Thread(target=self._feed, name=f"hermes-procs-{self._adapter.consumer}",
                                            daemon=True)
            self._thread.start()

    def _feed(self) -> None:
        while not self._stop.is_set():
            self.pump()
            self._stop.wait(self._poll_interval)

    def close(self) -> None:
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=2)

    def watch_adopted(self, session: ProcessSession) -> None:
        """An adopted process has no supervisor to report its end: look at it at every pump."""
        self._watched[session.id] = False

    def pump(self) -> int:
        """Move pending events of the adapter's jobs onto the queue; returns how many."""
        adapter = self._adapter
        with self._lock:
            self._look_for_lost()
            out: list[dict[str, Any]] = []
            for event in adapter._read_events():
                try:
                    out.extend(self._translate(event))
                except Exception as exc:  # noqa: BLE001 - the feeder must survive, but say why once
                    adapter._log_once(f"delivering a {event.get('type')} event", exc)
            out.extend(self._adopted_ends())
        for event in out:
            self.queue.put(adapter._view(event))
        if any(event.get("type") == "completion" for event in out):
            adapter._save_checkpoint()  # without the job: a restart after this must not tell it again
        return len(out)

    def _look_for_lost(self) -> None:
        """A job of ours whose supervisor was killed writes no end: the first look that finds it
        lost writes its events (core/registry/lostjobs.py), read right after. One look at each
        running job every LOST_EVERY seconds."""
        if time.monotonic() - self._lost_look < LOST_EVERY:
            return
        self._lost_look = time.monotonic()
        for sid in list(self._adapter._own):
            session = self._adapter._sessions.get(sid)
            if session is None or sid in self._watched or sid in self._ended or sid in self._adapter._remote:
                continue  # a sandbox host's job: its own supervisor there writes its end
            if session.exited:
                self._ended.add(sid)  # the look itself noted a lost job

    def _adopted_ends(self) -> list[dict[str, Any]]:
        """Completions of adopted sessions that have ended since the last look (stock Hermes
        notices them the same way: when it looks)."""
        found = []
        for sid, seen in list(self._watched.items()):
            session = self._adapter._sessions.get(sid)
            if seen or session is None or not session.exited:
                continue
            self._watched[sid] = True
            if session.notify_on_complete:
                found.append(self._completion(session, session.exit_code, session.completion_reason))
        return found

    # ---- events as stock Hermes shapes them ------------------------------------------------
    def _translate(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        """The queue's events for one event of the log (none, or one)."""
        adapter = self._adapter
        sid, kind = str(event.get("session_id") or ""), event.get("type")
        session = adapter._sessions.get(sid) if sid in adapter._own else None
        if session is None:  # not ours: only a named consumer passes these on, as they are
            return [event] if not adapter._own_only and kind in ("completion", "watch_match") else []
        if kind == "watch_match" and event.get("notice"):
            session._watch_disabled = True
            session.notify_on_complete = True  # as stock: one completion instead of more matches
            return [{**_base(session), "type": "watch_disabled", "suppressed": event.get("suppressed", 0),
                     "message": (f"Watch patterns disabled for process {sid} — {event['notice']}. Falling back to "
                                 "notify_on_complete semantics; you'll get exactly one notification when the "
                                 "process exits.")}]
        if kind == "watch_match":
            session._watch_hits += 1
            return [{**_base(session), "type": "watch_match", "pattern": event.get("pattern", ""),
                     "output": event.get("output", ""), "suppressed": event.get("suppressed", 0)}]
        end = "completion" if session._registry_notify else "exited"  # the supervisor's event of the exit
        if kind == end and session.notify_on_complete and sid not in self._watched:  # else _adopted_ends tells it
            return [self._completion(session, event.get("exit_code"), event.get("completion_reason"))]
        return []

    def _completion(self, session: ProcessSession, code: Any, reason: Any) -> dict[str, Any]:
        outcome = session._state() or {"exit_code": code, "completion_reason": reason or "exited"}
        chars = session.completion_output_chars or COMPLETION_OUTPUT_CHARS
        event = {"type": "completion", "session_id": session.id, "session_key": session.session_key,
                 "command": session.command, "exit_code": outcome.get("exit_code"),
                 "completion_reason": outcome.get("completion_reason"),
                 "termination_source": session.termination_source,
                 "output": strip_ansi(self._adapter._output_tail(session.id, chars, masked=False)),
                 "started_at": session.started_at}
        if session.handoff_note:
            event["handoff_note"] = session.handoff_note
        return event

    # ---- what Hermes calls -----------------------------------------------------------------
    def drain(self, session_key: str, owns_event: Callable[[dict[str, Any]], Any] | None,
              skip_poll_observed: bool) -> list[tuple[dict[str, Any], str]]:
        """Pop every pending event as ``(event, text)``; events of other sessions go back."""
        self.pump()
        results, requeue = [], []
        while True:
            try:
                event = self.queue.get_nowait()
            except queue.Empty:
                break
            if not owns(event, session_key, owns_event):
                requeue.append(event)
                continue
            sid = str(event.get("session_id") or "")
            if event.get("type") == "completion" and (
                    self.is_consumed(sid) or (skip_poll_observed and sid in self.poll_observed)):
                continue
            message = notification_text(event)
            if message:
                results.append((event, message))
        for event in requeue:
            self.queue.put(event)
        return results

    def is_consumed(self, sid: str) -> bool:
        stock = self._adapter._stock
        return sid in self.consumed or bool(stock is not None and stock.is_completion_consumed(sid))


def _base(session: ProcessSession) -> dict[str, Any]:
    return {"session_id": session.id, "session_key": session.session_key, "command": session.command,
            **{key: getattr(session, f"watcher_{key}") for key in ROUTE_KEYS}}


def owns(event: dict[str, Any], session_key: str, owns_event: Callable[[dict[str, Any]], Any] | None) -> bool:
    """Whether a drain for ``session_key`` may take ``event`` (stock Hermes' rule): an event
    carrying a session key (or an origin UI session) is taken only with proof it is the caller's
    (``owns_event(event)`` true, an exception counting as no; else an equal ``session_key``); an
    async-delegation result always needs proof, and a restored one is never taken without it."""
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
