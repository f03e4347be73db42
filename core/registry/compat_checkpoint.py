"""Which jobs a Hermes adapter instance owns, on disk, so a restarted agent can take them back.

Each :class:`~hermes_procs.core.agents.compat.HermesProcessRegistry` writes
``<home>/compat/<pid>-<instance>.json``: its writer's identity (pid and kernel start time) and
the settings of every job it started that still runs. ``recover_from_checkpoint`` adopts the
entries of writers that are gone (a crashed or restarted agent) and deletes their files; files of
live writers are left alone (another agent's jobs stay its own). ``prune`` deletes the files of
gone writers whose jobs have all ended (:func:`prune_orphans`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..supervisor import proctree
from .paths import ensure_private_dir, write_json_atomic

__all__ = ["Checkpoint"]


class Checkpoint:
    """One adapter instance's checkpoint file, and the files of the writers before it."""

    def __init__(self, home: Path, instance: str) -> None:
        self.dir = Path(home) / "compat"
        self.pid = os.getpid()
        self.path = self.dir / f"{self.pid}-{instance}.json"

    def save(self, entries: list[dict[str, Any]]) -> None:
        """Replace this instance's entries (the file goes away when there are none)."""
        if not entries:
            self.path.unlink(missing_ok=True)
            return
        ensure_private_dir(self.dir)
        write_json_atomic(self.path, {"owner_pid": self.pid, "owner_start": proctree.start_ticks(self.pid),
                                      "sessions": entries})

    def orphaned(self) -> list[tuple[Path, list[dict[str, Any]]]]:
        """(file, entries) of every checkpoint whose writer process is gone."""
        return orphaned(self.dir, skip=self.path)


def orphaned(folder: Path, skip: Path | None = None) -> list[tuple[Path, list[dict[str, Any]]]]:
    """(file, entries) of every checkpoint in `folder` whose writer process is gone."""
    found = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        if path == skip:
            continue
        try:
            data = json.loads(path.read_bytes())
            pid, start = int(data["owner_pid"]), data.get("owner_start")
            entries = [e for e in data.get("sessions", []) if isinstance(e, dict) and e.get("session_id")]
        except (OSError, ValueError, KeyError, TypeError):
            continue  # unreadable: leave it for a person to look at
        if not proctree.is_alive(pid, start if isinstance(start, int) else None):
            found.append((path, entries))
    return found


def prune_orphans(home: Path, running: Callable[[str], bool]) -> int:
    """Delete the checkpoints of gone writers (crashed adapters) none of whose jobs still runs:
    nothing is left to take back. Returns how many."""
    removed = 0
    for path, entries in orphaned(Path(home) / "compat"):
        if not any(running(str(entry["session_id"])) for entry in entries):
            path.unlink(missing_ok=True)
            removed += 1
    return removed
