"""The event stream for other programs and UIs (``hermes-procs events [--consumer N] [--follow]``).

    from hermes_procs.core import ProcessRegistry
    from hermes_procs.core.agents.events_stream import iter_events

    for event in iter_events(ProcessRegistry(), "my-ui", follow=True):
        print(event["type"], event["session_id"])

Yields every event of every job, oldest first, as dicts with secrets masked: ``started`` and
``exited`` for each job, ``completion`` for jobs started with notify_on_complete, ``watch_match``
for watch_patterns (and whatever else the supervisors record). Each consumer name has its own
durable cursor (``<home>/cursors/<consumer>``), so a consumer sees each event exactly once,
across processes and restarts; two consumers each see everything.

``types`` keeps only those event types; the others are still consumed (the cursor is one offset
into the log), so use a separate consumer name per filter. A bad consumer name or a type that
is not one of ``events.EVENT_TYPES`` yields one ``{"status": "error", "error": ...}`` dict and
stops, before anything is consumed.

With ``follow=True`` the iterator blocks and keeps yielding until interrupted (KeyboardInterrupt
ends it quietly) or until ``stop`` (a ``threading.Event``) is set. It is woken by inotify when
``events.jsonl`` changes (core/registry/watch.py) and drains only when its size changed; where inotify is
missing it checks with a cheap ``stat`` every ``interval`` seconds (also how often ``stop`` is
checked).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ..registry.events import EVENT_TYPES, MORE
from ..registry.redact import redact_obj
from .secret_values import mask_job_secrets

if TYPE_CHECKING:
    from ..registry.interface import Registry
    from ..registry.watch import HomeWatch

__all__ = ["iter_events"]


def iter_events(registry: Registry, consumer: str = "default", follow: bool = False,
                types: Iterable[str] | None = None,
                *, interval: float = 0.2, stop: threading.Event | None = None) -> Iterator[dict[str, Any]]:
    """Yield undelivered events for ``consumer`` (redacted); with ``follow``, keep waiting for more."""
    wanted = set(types) if types else None
    unknown = sorted(str(t) for t in wanted or () if t not in EVENT_TYPES)
    if unknown:
        yield {"status": "error", "error": f"unknown event type {unknown[0]!r}: the types are "
                                           f"{', '.join(EVENT_TYPES)}"}
        return
    log_path = _events_path(registry)
    watch = _watch(registry) if follow else None
    try:
        yield from _follow(registry, consumer, follow, wanted, interval, stop, log_path, watch)
    finally:
        if watch is not None:
            watch.close()


def _follow(registry: Registry, consumer: str, follow: bool, wanted: set[str] | None, interval: float,
            stop: threading.Event | None, log_path: str | None, watch: HomeWatch | None) -> Iterator[dict[str, Any]]:
    last_stamp = None
    while True:
        if stop is not None and stop.is_set():
            return
        stamp = _stamp(log_path)
        if stamp is None or stamp != last_stamp or not follow:
            last_stamp = stamp
            more = True
            while more:  # a drain returns a page; the last entry says when more remain
                batch = registry.drain_events(consumer, all_types=True)
                if isinstance(batch, dict):  # {"status": "error", ...}
                    yield batch
                    return
                more = bool(batch) and batch[-1].get("type") == MORE
                yield from (mask_job_secrets(redact_obj(event), registry, raw=event) for event in batch
                            if event.get("type") != MORE and (wanted is None or event.get("type") in wanted))
        if not follow or _stopped_while_waiting(watch, stop, interval):
            return


def _stopped_while_waiting(watch: HomeWatch | None, stop: threading.Event | None, interval: float) -> bool:
    """Wait for the next look (at most `interval`; at once when the log grows, with inotify);
    True when `stop` was set or Ctrl-C pressed meanwhile."""
    try:
        if watch is not None:
            watch.wait(interval)  # returns at once when the log grows
        elif stop is not None:
            return stop.wait(interval)
        else:
            time.sleep(interval)
    except KeyboardInterrupt:
        return True
    return False


def _watch(registry: Registry) -> HomeWatch | None:
    """A HomeWatch (inotify) on the registry's home, or None (then the stat is polled)."""
    home = getattr(registry, "home", None)
    if home is None:
        return None
    from ..registry.watch import HomeWatch

    watch = HomeWatch(home)
    if not watch.pushed:
        watch.close()
        return None
    return watch


def _events_path(registry: Registry) -> str | None:
    home = getattr(registry, "home", None)
    return os.path.join(os.fspath(home), "events.jsonl") if home is not None else None


def _stamp(path: str | None) -> tuple[object, ...] | None:
    """(inode, size, mtime) of the event log; None when unknown (then every tick drains)."""
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return ("missing",)
    return (st.st_ino, st.st_size, st.st_mtime_ns)
