"""Argument definitions shared by the commands, and what every command starts with: its
--home/--json (`opts`); the registry over that home is home.py's `registry` (`existing_registry`
 for a command on the jobs already there)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from .home import check_home, existing_registry, registry

__all__ = ["EscOpt", "HomeOpt", "HostOpt", "IdArg", "JsonOpt", "check_home", "existing_registry", "opts", "registry"]

HostOpt = Annotated[
    Optional[str],
    typer.Option(
        "--host",
        metavar="URL",
        help="Jobs on another machine: ssh://USER@HOST:PORT (user and port optional), "
        "docker://CONTAINER, k8s://NAMESPACE/POD/CONTAINER (namespace and container optional) "
        "or a host name from the config file (default: $HERMES_PROCS_HOST, else this machine).",
        show_default=False,
    ),
]
HomeOpt = Annotated[
    Optional[str],
    typer.Option(
        "--home",
        metavar="PATH",
        help="State home (default: $HERMES_PROCS_HOME, $HERMES_HOME/procs, ~/.hermes/procs).",
        show_default=False,
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the Python API's result as one JSON document.")]
IdArg = Annotated[str, typer.Argument(metavar="ID", help="Session id, a unique prefix (>= 4 hex), or STACK/JOB.")]
EscOpt = Annotated[
    bool, typer.Option("--escapes", "-E", help="Interpret backslash escapes in DATA (\\n, \\r, \\x03, \\e, ...).")
]


def opts(ctx: typer.Context, home: Optional[str], as_json: bool = False) -> tuple[Optional[str], bool]:
    """Merge per-command --home/--json with the ones given before the subcommand."""
    root = ctx.obj or {}
    return (home if home is not None else root.get("home")), bool(as_json or root.get("json"))
