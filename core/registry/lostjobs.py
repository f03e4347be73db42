"""A lost job's end, noted once: its supervisor vanished (SIGKILL, the OOM killer) without
recording an exit, and its process is gone too.

Nobody can know its exit code (only the supervisor, its parent, could), so none is made up. But
the first look that finds it lost writes ``lost.json`` (when it was found ended) and appends the
events its supervisor would have written: ``exited`` (``completion_reason`` ``lost``, no exit
code) and, for a ``notify_on_complete`` job, ``completion``. So an agent told it would be
notified is, and a lost job's duration stops instead of growing for ever (at the first look
after its end: a dashboard or the Hermes adapter looks every few seconds). Later looks read
``lost.json``. Nothing is written by a reader in another pid namespace than the supervisor's
(its pids mean nothing there), nor for a process adopted from stock Hermes (it never had a
supervisor: the adapter watches it itself).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any

from ..supervisor.supervisor import pid_namespace
from . import events
from .model import iso_time, parse_time

LOST_NAME = "lost.json"


def note(jobdir: Path, meta: dict[str, Any], proc: dict[str, Any]) -> float | None:
    """When the lost job in `jobdir` was found ended (epoch seconds); the first caller records it
    and appends its events. None when this reader cannot tell (another pid namespace, an
    adopted process)."""
    if meta.get("adopted_from") or proc.get("pidns", 0) not in (0, pid_namespace()):
        return None
    now = time.time()
    try:
        made = _create(jobdir / LOST_NAME, {"ended_at": now, "noted": iso_time(now)})
    except OSError:  # a folder being pruned, a full disk: nothing to note it in
        return None
    if not made:
        return _recorded(jobdir / LOST_NAME)
    _events(jobdir, meta)
    return now


def _create(path: Path, record: dict[str, Any]) -> bool:
    """Create `path` holding `record`, whole at once (written aside, then linked: a reader never
    sees it empty); False when it exists already (someone else noted it first)."""
    aside = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}")
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(record, fh)
        os.link(aside, path, follow_symlinks=False)
    except FileExistsError:
        return False
    finally:
        with contextlib.suppress(OSError):
            os.unlink(aside)
    return True


def _events(jobdir: Path, meta: dict[str, Any]) -> None:
    base = {"session_id": jobdir.name, "t": time.time(), "exit_code": None, "completion_reason": "lost"}
    kinds = ["exited", "completion"] if meta.get("notify_on_complete") else ["exited"]
    try:
        for kind in kinds:
            extra = {"command": meta.get("command", ""), "output": ""} if kind == "completion" else {}
            events.append(jobdir.parent.parent, {"type": kind, **base, **extra})
    except OSError:
        pass  # a home without its event log (a planted link): the job still shows lost


def _recorded(path: Path) -> float | None:
    try:
        with open(path, "rb") as fh:
            record = json.loads(fh.read(4096))
    except (OSError, ValueError):
        return None
    return parse_time(record.get("ended_at")) if isinstance(record, dict) else None
