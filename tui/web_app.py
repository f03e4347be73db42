"""The dashboard process `hermes-procs web` starts for each browser connection (through
textual-serve, which sets Textual's web driver in the environment).

``python -m hermes_procs.tui.web_app [--home PATH] [--read-only]``

It dies with its server: the kernel kills it when the server process ends, however it ends
(a dashboard whose server was gone used to stay, reading a closed pipe, for ever).
"""

from __future__ import annotations

import argparse
import ctypes
import os
import signal
import sys

from .app import run

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """SIGKILL when the parent (the web server) exits; exit now if it already has."""
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # it ended before the line above
        raise SystemExit(0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hermes_procs.tui.web_app")
    parser.add_argument("--home")
    parser.add_argument("--read-only", action="store_true")
    args = parser.parse_args(argv)
    die_with_parent()
    return run(args.home, read_only=args.read_only)


if __name__ == "__main__":
    raise SystemExit(main())
