"""Background processes that stock Hermes started, taken over as hermes-procs jobs.

A gateway that ran without hermes-procs records its running background processes in
``$HERMES_HOME/processes.json`` (id, command, pid, the pid's kernel start time, cwd, routing).
When the plugin's ``recover_from_checkpoint`` finds one still running (same pid, same start
time: a recycled pid is never adopted), it gets a job folder under the same id: ``meta.json``
and ``proc.json`` but no supervisor. The registry then treats it as it treats any job whose
supervisor is gone and whose process runs on (``unsupervised``): it is listed, ``wait`` waits for
it, ``kill`` kills its process group (identity-checked). Its earlier output was in the old
gateway's memory and is gone, and nobody can learn its exit code: when it ends it is ``lost``,
which the adapter reports as stock Hermes does (exit code None).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path
from typing import Any

from ..registry.paths import is_real_dir, write_json_atomic
from ..supervisor import proctree

__all__ = ["adopt", "stock_entries"]

_STOCK_ID = re.compile(r"proc_[0-9a-f]{12}")
MAX_FILE = 4 << 20


def stock_entries(path: Path | None) -> list[dict[str, Any]]:
    """The entries of stock Hermes' checkpoint that name a live host process (pid, start time)."""
    if path is None:
        return []
    try:
        with open(path, "rb") as fh:
            data = json.loads(fh.read(MAX_FILE))
    except (OSError, ValueError):
        return []
    found = []
    for entry in data if isinstance(data, list) else []:
        if not isinstance(entry, dict) or entry.get("pid_scope", "host") != "host":
            continue
        pid, ticks = entry.get("pid"), entry.get("host_start_time")
        if not (isinstance(pid, int) and pid > 0 and _STOCK_ID.fullmatch(str(entry.get("session_id", "")))):
            continue
        ticks = ticks if isinstance(ticks, int) else proctree.start_ticks(pid)  # an old entry: as stock does
        if ticks is not None and proctree.is_alive(pid, ticks):
            found.append({**entry, "host_start_time": ticks})
    return found


def adopt(jobs_dir: Path, entry: dict[str, Any], name: str) -> bool:
    """Create the job folder of a live stock process (see stock_entries); False when a job of
    that id exists already or the folder cannot be written."""
    sid = entry["session_id"]
    if is_real_dir(jobs_dir / sid):
        return False
    started = entry.get("started_at")
    started = float(started) if isinstance(started, (int, float)) else time.time()
    meta = {"session_id": sid, "command": str(entry.get("command") or "unknown"), "cwd": entry.get("cwd") or "/",
            "pty": False, "name": name, "task_id": str(entry.get("task_id") or ""),
            "session_key": str(entry.get("session_key") or ""),
            "notify_on_complete": bool(entry.get("notify_on_complete")),
            "watch_patterns": [p for p in entry.get("watch_patterns") or [] if isinstance(p, str) and p],
            "rows": 30, "cols": 120, "max_runtime": None, "created_at": started, "shell": [], "env": {},
            "quiet_after": None, "rerun_of": None, "adopted_from": "hermes processes.json"}
    proc = {"pid": entry["pid"], "pid_start": entry["host_start_time"], "supervisor_pid": None,
            "supervisor_start": None, "started_at": started}
    staging = jobs_dir / f".new-{sid}"
    try:
        staging.mkdir(mode=0o700)
    except OSError:
        return False  # another process adopts it right now
    try:
        write_json_atomic(staging / "meta.json", meta)
        write_json_atomic(staging / "proc.json", proc)
        os.rename(staging, jobs_dir / sid)
        return True
    except OSError:
        return False
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # gone after the rename
