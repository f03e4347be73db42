"""Leases: a job that lives only as long as another process (`spawn(lease=PID)`).

The registry names the owner by identity, pid + start ticks (core/supervisor/proctree.py), in
the job's meta.json (`lease`); the job's supervisor watches that process and kills the job's
tree when it ends, unless the job is pinned (core/supervisor/supervisor_lease.py). The
supervisor keeps the pin in `lease.json` next to meta.json ({"pinned": bool}), which `poll` and
`list` read. Stdlib only, Python 3.9 syntax: it runs on remote hosts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..supervisor import proctree
from ..supervisor.bounds import BadNumber, whole
from .paths import read_json

LEASE_FILE = "lease.json"


def owner(pid: object) -> dict[str, int]:
    """The meta.json `lease` of a job leased to process `pid`: {"pid", "start_ticks"}. Raises
    BadNumber (one line) for a pid that is not a whole number or names no running process."""
    pid = whole(pid, "lease", 1)
    fields = proctree.stat_fields(pid)
    if not fields or fields[0] in ("Z", "X"):
        raise BadNumber(f"lease: no running process has pid {pid} (lease takes the pid of the process the "
                        "job should not outlive)")
    return {"pid": pid, "start_ticks": int(fields[19])}


def view(jobdir: Path, meta: dict[str, Any]) -> dict[str, Any] | None:
    """What poll and list show of a job's lease: {"pid", "pinned", "owner_alive"}; None when the
    job has none."""
    lease = meta.get("lease")
    if not isinstance(lease, dict):
        return None
    try:
        pid, ticks = int(lease["pid"]), int(lease["start_ticks"])
    except (KeyError, TypeError, ValueError):
        return None
    try:
        state = read_json(jobdir / LEASE_FILE) or {}
    except (OSError, ValueError):
        state = {}
    return {"pid": pid, "pinned": bool(isinstance(state, dict) and state.get("pinned")),
            "owner_alive": proctree.is_alive(pid, ticks)}
