"""Argument definitions shared by the commands, and the two things every command starts with:
its --home/--json (`opts`) and the registry over that home (`registry`)."""

from __future__ import annotations

import os
from typing import Annotated, Optional

import typer

from hermes_procs.core.registry.interface import Registry

from .output import CliError

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


def check_home(home: Optional[str]) -> None:
    """This machine's state home is usable (created 0700 if missing), else the CliError that
    `registry` gives: for the commands that open it in another process (dashboard, web)."""
    from hermes_procs.core.registry.paths import HomeError, ensure_private_dir, resolve_home

    try:
        ensure_private_dir(resolve_home(home))
    except (HomeError, OSError) as exc:
        raise _home_error(home, exc) from exc


def _home_error(home: Optional[str], exc: Exception) -> CliError:
    return CliError(f"cannot open state home {home or '(default)'}: {exc}")


def registry(home: Optional[str]) -> Registry:
    """The ProcessRegistry over `home`; a CliError when the home cannot be used."""
    from hermes_procs.core import ProcessRegistry

    remote = os.environ.get("HERMES_PROCS_HOST") not in (None, "", "local")  # set by --host
    try:
        return ProcessRegistry(home=home)
    except Exception as exc:  # noqa: BLE001 - bad home, permissions, ...: one line for the user
        if remote and isinstance(exc, ValueError):  # a bad host URL or unknown host name
            raise CliError(str(exc)) from exc
        raise _home_error(home, exc) from exc
