"""The `hermes-procs` command run in this process (no interpreter start: ~0.4 s saved a call),
its status, stdout and stderr captured: `cli(home, "ls", "--json")`."""

from __future__ import annotations

import contextlib
import io
import os
from dataclasses import dataclass


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


def cli(home, *args: str) -> Ran:
    from hermes_procs.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    code: object = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(["--home", os.fspath(home), *args])
        except SystemExit as exc:
            code = exc.code
    return Ran(code if isinstance(code, int) else 1, out.getvalue(), err.getvalue())
