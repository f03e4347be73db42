"""The installed version of hermes-procs, for ``hermes-procs --version`` and the MCP server.

Its one copy is ``hermes_procs.__version__`` (hermes_procs/__init__.py), which pyproject.toml
reads at build time; the core and the CLI do not import that package (it is the entry point:
it plugs the dashboard into the CLI), they read the installed distribution's metadata.
"""

from __future__ import annotations

from importlib import metadata

__all__ = ["version"]


def version() -> str:
    try:
        return metadata.version("hermes-procs")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "0+unknown"
