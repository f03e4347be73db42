"""The hosts a job was started on from this machine (`<home>/remote-hosts.json`): its dashboard
shows their jobs next to the local ones (core/remote/hosts.py) until `hermes-procs hosts --forget`.
"""

from __future__ import annotations

import json
import os

from ..registry.paths import ensure_private_dir, resolve_home, write_json_atomic

KNOWN = "remote-hosts.json"


def remember(url: str, home: str | os.PathLike[str] | None = None) -> None:
    """Note that a job was started on `url` (the dashboard of this machine then shows it)."""
    path = ensure_private_dir(resolve_home(home)) / KNOWN
    hosts = remembered(home)
    if url not in hosts:
        write_json_atomic(path, {"hosts": [*hosts, url][-50:]})


def remembered(home: str | os.PathLike[str] | None = None) -> list[str]:
    try:
        data = json.loads((resolve_home(home) / KNOWN).read_text())
        return [h for h in data.get("hosts", []) if isinstance(h, str)]
    except (OSError, ValueError, AttributeError):
        return []


def forget(url: str, home: str | os.PathLike[str] | None = None) -> bool:
    """Stop showing a remembered host (its jobs keep running there). False: it was not remembered."""
    hosts = remembered(home)
    label = url.split("?", 1)[0]
    kept = [h for h in hosts if h != url and h.split("?", 1)[0] != label]
    if kept == hosts:
        return False
    write_json_atomic(ensure_private_dir(resolve_home(home)) / KNOWN, {"hosts": kept})
    return True
