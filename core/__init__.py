"""The registry core: durable jobs, each under its own supervisor process. No UI imports here.

`from hermes_procs.core import ProcessRegistry` is the public API (CONTRACT.md). The code lives
in rooms, each importing only the ones below it (import-linter checks it; docs/internals.md
draws the map):

    agents/      the agent faces: the `process` tool, the MCP server, the Hermes adapter and plugin
    (stacks/)    a project's jobs with dependencies and restart policies (issue 24), on the registry
    remote/      other machines: host addresses, the stdio client and server, every host at once
    registry/    the Python API (`ProcessRegistry`, the `Registry` interface) over the state home
    supervisor/  the per-job supervisor program and its warm template: stdlib only, run as
                 `python -I -S`, shipped to Python 3.9 hosts; the stdlib pieces the registry shares

This module stands above the rooms: it plugs remote hosts into `ProcessRegistry(host=...)`
and stacks into `ProcessRegistry.up`, `down`, `restart_stack` and `stacks`.
`tool.py` and `compat.py` here only re-export the contract's import paths.
"""

from __future__ import annotations

import os
from typing import Any

from .registry.process_registry import ProcessRegistry, plug_remote, plug_stacks

__all__ = ["ProcessRegistry"]


def _remote_registry(host: str, home: str | os.PathLike[str] | None) -> object:
    """`ProcessRegistry(host=URL)` of a remote host (core/remote/ loads only then)."""
    from .remote.client import RemoteRegistry

    return RemoteRegistry(host, home)


plug_remote(_remote_registry)


def _stacks_api() -> Any:
    """core/stacks/api.py, loaded at the first stack call (it reads YAML and TOML files)."""
    from .stacks import api

    return api


plug_stacks(_stacks_api)
