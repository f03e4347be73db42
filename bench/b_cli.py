"""A CLI that starts like git (issue 26 item 3): the whole `hermes-procs` process for the
queries agents run from a shell (`poll --json`, `ls`, `log`, `wait` on an ended job), against
a bare `python -c pass` of the same interpreter, wall time. Bytecode caches are written first
(PYTHONDONTWRITEBYTECODE is dropped for these processes), as an installed copy has them. The
queries are answered without typer (cli/quick.py); three info rows bound the CLI from below:
importing typer alone (what every other command pays), the registry alone, and the standard
library modules the registry stands on (pathlib, json, socket, subprocess, re, typing).
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from hermes_procs.core import ProcessRegistry

from .common import PY, Config, Row, interleave, temp_home

ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _wall(argv: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, capture_output=True, env=ENV, check=True)
    return (time.perf_counter() - t0) * 1000


def _command() -> list[str]:
    """The installed `hermes-procs` script next to this interpreter (what a shell runs), else
    `python -m hermes_procs` (runpy adds a few ms)."""
    script = Path(PY).with_name("hermes-procs")
    return [str(script)] if script.exists() else [PY, "-m", "hermes_procs"]


def run(cfg: Config) -> list[Row]:
    rows = []
    bare = [PY, "-c", "pass"]
    with temp_home() as home:
        reg = ProcessRegistry(home=home)
        sid = reg.spawn("echo hello")["session_id"]
        reg.wait(sid, timeout=30)
        cli = [*_command(), "--home", str(home)]
        for name, args in (("poll ID --json", ["poll", sid, "--json"]), ("ls", ["ls"]), ("log ID", ["log", sid]),
                           ("wait ID (ended)", ["wait", sid]), ("search ID PATTERN", ["search", sid, "hello"])):
            ours, base = interleave(cfg.runs, lambda a=args: _wall(cli + a), lambda: _wall(bare))
            ratio = sorted(ours)[len(ours) // 2] / sorted(base)[len(base) // 2]
            rows.append(Row(f"hermes-procs {name}, whole process", "ms", ours, "python -c pass", base,
                            "<= 3x (issue 26)", ratio <= 3))
        for name, module in (("import typer", "typer"), ("import the registry", "hermes_procs.core"),
                             ("import its standard library", "pathlib, json, socket, subprocess, re, typing")):
            ours, base = interleave(cfg.runs, lambda m=module: _wall([PY, "-c", f"import {m}"]), lambda: _wall(bare))
            rows.append(Row(f"python -c '{name}'", "ms", ours, "python -c pass", base, "info", None))
    return rows
