"""A CLI that starts like git (issue 26 item 3): the whole `hermes-procs` process for the
queries agents run from a shell (`poll --json`, `ls`, `log`, `wait` on an ended job), against
a bare `python -c pass` of the same interpreter, wall time. Bytecode caches are written first
(PYTHONDONTWRITEBYTECODE is dropped for these processes), as an installed copy has them. The
queries are answered without typer (cli/quick.py); three info rows bound the CLI from below:
importing typer alone (what every other command pays), the registry alone, and the standard
library modules `hermes-procs ls` loads that `python -c pass` does not (read from
`python -X importtime` in the same run: pathlib, json, re, typing, datetime ...).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
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


def _imported(argv: list[str]) -> set[str]:
    """The modules `argv` (a python process) imports, from `-X importtime`."""
    done = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], capture_output=True, text=True, env=ENV, check=True)
    return {row.split("|")[-1].strip() for row in done.stderr.splitlines() if row.startswith("import time:")}


def _stdlib_of(cli: list[str]) -> str:
    """The top-level standard library modules `cli ls` imports beyond a bare interpreter's, as
    one `import` line's names (the floor of any CLI that stands on them)."""
    ours = _imported([PY, "-m", "hermes_procs", *cli[1:], "ls"])
    bare = _imported([PY, "-c", "pass"])
    names = {m for m in ours - bare if "." not in m and m in sys.stdlib_module_names and not m.startswith("_")
             and importlib.util.find_spec(m) is not None}  # not `nt`: ntpath tries it on every system
    return ", ".join(sorted(names - {"runpy"}))  # runpy: -m's own


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
                             ("import the standard library ls loads", _stdlib_of(cli))):
            ours, base = interleave(cfg.runs, lambda m=module: _wall([PY, "-c", f"import {m}"]), lambda: _wall(bare))
            rows.append(Row(f"python -c '{name}'", "ms", ours, "python -c pass", base, "info", None,
                            note=module if "," in module else ""))
    return rows
