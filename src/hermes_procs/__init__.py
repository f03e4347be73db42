"""hermes-procs: durable background jobs shared by AI agents and humans.

The distribution's top-level package holds only this and `__main__` (in src/hermes_procs/, out
of the checkout's root, so that it never shadows an installed copy); the code lives in its
subpackages, one top-level folder each, linked in here: `hermes_procs.core` (core/: the
supervisor, the registry, remote hosts, the agent faces), `hermes_procs.cli` (cli/: the
`hermes-procs` command) and `hermes_procs.tui` (tui/: the Textual dashboard). `main` is the
`hermes-procs` command: the CLI with the dashboard plugged in, so that cli/ and tui/ never
import each other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes_procs.core.registry.interface import Registry

__version__ = "0.1.0"


class _Dashboard:
    """The dashboard as the CLI sees it (cli.cmd_dashboard.Dashboard); Textual loads only on `run`."""

    @staticmethod
    def run(home: str | None, demo: bool) -> int:
        from hermes_procs.tui.app import run

        return run(home, demo=demo)

    @staticmethod
    def web(home: str | None, host: str, port: int, read_only: bool, allow_remote: bool, max_sessions: int) -> int:
        from hermes_procs.tui.web import serve  # aiohttp and textual-serve load only here

        return serve(home, host=host, port=port, read_only=read_only, allow_remote=allow_remote,
                     max_sessions=max_sessions)

    @staticmethod
    def start_demo(registry: Registry) -> list[dict[str, Any]]:
        from hermes_procs.tui.demo import start_demo  # stdlib only: no Textual

        return start_demo(registry)

    @staticmethod
    def stop_demo(registry: Registry) -> list[dict[str, Any]]:
        from hermes_procs.tui.demo import stop_demo

        return stop_demo(registry)


def main(argv: list[str] | None = None) -> None:
    """The `hermes-procs` console script (also `python -m hermes_procs`)."""
    from hermes_procs.cli.main import main as cli_main

    cli_main(argv, dashboard=_Dashboard())
