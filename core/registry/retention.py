"""Pruning finished jobs: keep those younger than N days and at most the newest M; never a running one.

A finished job whose completion/watch events a known consumer has not drained yet is kept past
the count limit (only the age limit removes it). A symbolic link named like a job folder is not
a job: prune removes the link itself and never follows it.

Prune also tidies what the jobs leave in the home: cursors unused for N days and those of
per-process consumers whose process is gone (a crashed dashboard or Hermes adapter), the
checkpoints of crashed adapters with no job left running, and the event log, compacted to what
some consumer has not read plus the events of the jobs kept (core/registry/events_compact.py).
"""

from __future__ import annotations

import math
import os
import shutil
import time
from pathlib import Path
from typing import Any

from ..supervisor.bounds import BadNumber
from . import compat_checkpoint, events, events_compact
from .envnumbers import env_number
from .jobstate import CorruptJob, load
from .paths import list_job_ids, list_job_links

DEFAULT_KEEP_DAYS = 7.0
DEFAULT_KEEP_COUNT = 200


def _setting(value: object, env: str, default: float) -> float:
    """A retention limit: the argument, else the environment setting, else `default`; a
    finite number >= 0 (BadNumber otherwise, naming the argument)."""
    if value is None:
        value = env_number(env, default, lowest_ok=True)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:  # NaN too
        raise BadNumber(f"{env.lower().removeprefix('hermes_procs_')} must be a number >= 0, not {value!r}"[:120])
    return math.inf if value > 1e308 else float(value)  # an int too big for a float: keep everything


def cutoff(keep_days: float | None = None) -> float:
    """The time before which a finished job (or a stack that is down) is past retention:
    keep_days (else HERMES_PROCS_KEEP_DAYS, default 7) ago; -inf when kept for ever."""
    return time.time() - _setting(keep_days, "HERMES_PROCS_KEEP_DAYS", DEFAULT_KEEP_DAYS) * 86400


def keep_count() -> float:
    """How many finished jobs retention keeps at most (HERMES_PROCS_KEEP_COUNT, default 200; inf: all)."""
    return _setting(None, "HERMES_PROCS_KEEP_COUNT", DEFAULT_KEEP_COUNT)


def _finished(jobs_dir: Path) -> list[tuple[float, str]]:
    """(ended at, session id) of the finished jobs whose supervisor is gone, newest first."""
    finished: list[tuple[float, str]] = []
    for session_id in list_job_ids(jobs_dir):
        try:
            job = load(jobs_dir / session_id)
        except CorruptJob:
            continue  # damaged folders are shown, never silently deleted
        if not job.running and not job.supervisor_alive:
            finished.append((job.ended_at or job.started_at, session_id))
    finished.sort(reverse=True)
    return finished


def prune(jobs_dir: Path, keep_days: float | None = None, keep_count: int | None = None) -> dict[str, Any]:
    """Delete finished jobs older than keep_days or beyond the newest keep_count finished ones."""
    too_old = cutoff(keep_days)
    count = _setting(keep_count, "HERMES_PROCS_KEEP_COUNT", DEFAULT_KEEP_COUNT)
    finished = _finished(jobs_dir)
    over = [sid for i, (ended, sid) in enumerate(finished) if i >= count and ended >= too_old]
    pending = events.undelivered_sessions(jobs_dir.parent) if over else set()
    doomed = [sid for i, (ended, sid) in enumerate(finished)
              if ended < too_old or (i >= count and sid not in pending)]
    for left in jobs_dir.glob(".gone-proc_*"):  # what a delete that failed part way left
        shutil.rmtree(left, ignore_errors=True)
    failures = {sid: why for sid in doomed if (why := _remove(jobs_dir / sid))}
    pruned = [sid for sid in doomed if sid not in failures]
    links = list_job_links(jobs_dir)
    for name in links:
        try:
            (jobs_dir / name).unlink(missing_ok=True)  # the link itself, never what it points to
        except OSError as exc:
            failures[name] = exc.strerror or str(exc)
    result = {"status": "ok", "pruned": len(pruned), "pruned_ids": pruned,
              "kept_finished": len(finished) - len(pruned), "kept_undelivered": len(set(over) & pending),
              "removed_links": [name for name in links if name not in failures], **_tidy(jobs_dir, too_old)}
    if failures:  # a read-only home, another user's folder: said, never counted as pruned
        first, why = next(iter(failures.items()))
        result.update(status="error", not_pruned=list(failures),
                      error=f"could not delete {len(failures)} of {len(doomed) + len(links)} job folders "
                            f"({first}: {why}); pruned {len(pruned)}")
    return result


def _remove(folder: Path) -> str:
    """Delete a job folder; "" when it is gone, else why it is still there, whole. It is renamed
    out of the listing first, so a failure part way (a read-only or foreign folder) never leaves a
    job with half its files; a `.gone-` folder left by a failed delete goes at the next prune."""
    gone = folder.with_name(".gone-" + folder.name)
    try:
        os.rename(folder, gone)
    except FileNotFoundError:
        return ""
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    shutil.rmtree(gone, ignore_errors=True)
    return ""


def _tidy(jobs_dir: Path, too_old: float) -> dict[str, Any]:
    """Old and orphaned cursors and checkpoints go, then the event log is compacted."""
    home = jobs_dir.parent
    stale = events_compact.stale_consumers(home)
    for consumer in stale:
        events.forget(home, consumer)
    cursors = len(stale) + events.prune_cursors(home, too_old)
    jobs = set(list_job_ids(jobs_dir))
    checkpoints = compat_checkpoint.prune_orphans(home, lambda sid: sid in jobs and _running(jobs_dir / sid))
    tidied: dict[str, Any] = {"pruned_cursors": cursors, "pruned_checkpoints": checkpoints, "events_dropped_bytes": 0}
    try:
        tidied["events_dropped_bytes"] = events_compact.compact(home, jobs)
    except OSError as exc:  # a planted link, a full disk: the jobs are pruned all the same
        return {**tidied, "events_note": f"the event log was not compacted: {exc}"}
    return tidied


def _running(jobdir: Path) -> bool:
    try:
        return load(jobdir).running
    except (CorruptJob, OSError):
        return False
