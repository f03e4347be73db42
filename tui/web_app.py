"""The dashboard process `hermes-procs web` starts for each browser connection (through
textual-serve, which sets Textual's web driver in the environment).

``python -m hermes_procs.tui.web_app [--home PATH] [--read-only]``
"""

from __future__ import annotations

import argparse

from .app import run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="hermes_procs.tui.web_app")
    parser.add_argument("--home")
    parser.add_argument("--read-only", action="store_true")
    args = parser.parse_args(argv)
    return run(args.home, read_only=args.read_only)


if __name__ == "__main__":
    raise SystemExit(main())
